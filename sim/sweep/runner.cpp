#include "sim/sweep/runner.h"

#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <system_error>
#include <thread>

#include "sim/common/error.h"
#include "sim/sweep/metric_check.h"
#include "sim/sweep/sweep_files.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace tessera::sweep {
namespace {

volatile sig_atomic_t g_interrupted = 0;

void on_signal(int) { g_interrupted = 1; }

constexpr size_t kMaxOutput = 16384;  // bytes of a child's output kept for the error text

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t k = 0;
  while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k]))) ++k;
  return s.substr(k);
}

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto total = static_cast<long long>(std::llround(s));
  char buf[32];
  if (total >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", total / 3600, (total / 60) % 60, total % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", total / 60, total % 60);
  }
  return buf;
}

}  // namespace

bool interrupted() { return g_interrupted != 0; }

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: poll() returns EINTR so the loop notices at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

fs::path self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot resolve /proc/self/exe: " + ec.message());
  return p;
}

std::string cpu_usage_text() {
  rusage self {}, children {};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &children);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "cpu: sweep process %.3f s user + %.3f s sys; point processes %.3f s user + %.3f s sys; "
                "sweep process peak RSS %.1f MiB",
                secs(self.ru_utime), secs(self.ru_stime), secs(children.ru_utime), secs(children.ru_stime),
                static_cast<double>(self.ru_maxrss) / 1024.0);
  return buf;
}

void log_line(const fs::path& out_dir, const std::string& text) {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", std::localtime(&now));
  const std::string line = std::string(stamp) + " " + text + "\n";
  int fd = -1;
  try {
    fd = open_no_follow(out_dir / "sweep.log", O_WRONLY | O_APPEND | O_CREAT, "cannot open for appending");
  } catch (const UnsafeOutputPath&) {
    throw;  // a planted link: stop
  } catch (const InputError&) {
    return;  // the log is informational; the results are the record
  }
  [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());  // one write: lines of ranks never mix
  ::close(fd);
}

// ---------------------------------------------------------------------------------------

LocalPool::LocalPool(const Experiment& e, RunSettings settings) : e_(e), settings_(std::move(settings)) {
  if (settings_.jobs < 1) settings_.jobs = 1;
  make_output_dir(settings_.out_dir);
  make_real_dir(settings_.out_dir / "points");
}

LocalPool::~LocalPool() { kill_all(); }

void LocalPool::kill_all() {
  for (auto& c : children_) {
    ::kill(c.pid, SIGKILL);
    int st = 0;
    while (::waitpid(c.pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (c.fd >= 0) ::close(c.fd);
    if (c.row_fd >= 0) ::close(c.row_fd);
  }
  children_.clear();
}

void LocalPool::write_config(const Point& p) const {
  const fs::path dir = settings_.out_dir / "points" / p.id;
  make_real_dir(dir);
  remove_stale_temporaries(dir);  // of a killed earlier run of this point
  // Replaced, not written in place: a link planted at config.yaml is replaced, never followed.
  replace_file(dir / "config.yaml", e_.config_yaml(p));
}

void LocalPool::start(const Point& p) {
  const std::string rel = "points/" + p.id;
  const fs::path dir = settings_.out_dir / rel;
  const InProcessRunner* in_process = settings_.in_process;
  // In process without reports, an ok point leaves nothing but its row: no directory, no
  // config file (issue 35: 10,000 points left 2.2 GB). Otherwise the child reads or writes there.
  const bool point_dir = in_process == nullptr || settings_.keep_reports;
  if (point_dir) {
    try {
      write_config(p);
      std::error_code ec;
      fs::remove(dir / "report.json", ec);  // never read a stale report of an earlier, killed run
    } catch (const UnsafeOutputPath&) {
      throw;
    } catch (const std::exception& err) {
      ready_.push_back(failed_row(e_, p, std::string("cannot prepare the point: ") + err.what()));
      return;
    }
  }
  // Everything the child needs, built before fork().
  std::vector<std::string> args = {settings_.runner_exe.string(), "run", "--arch", rel + "/config.yaml", "--workload",
                                   e_.workloads[p.workload_index].path.string(), "--batch", std::to_string(p.batch), "--out", rel, "-q"};
  for (auto& a : e_.run_arguments(p)) args.push_back(std::move(a));  // --precision, --input-shape
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string cwd = settings_.out_dir.string();
  const std::string exe = settings_.runner_exe.string();
  const PointJob job{e_, p, args, rel + "/config.yaml", settings_.keep_reports, settings_.share_programs};
  if (in_process != nullptr && in_process->prepare) {
    try {
      in_process->prepare(job);  // shared work; a failure is the child's to report, as `tessera run` would
    } catch (...) {
    }
  }
  // Nothing buffered may reach the child's pipe as if the child had written it.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);

  int fds[2];
  int row_fds[2] = {-1, -1};
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    ready_.push_back(failed_row(e_, p, std::string("cannot create a pipe: ") + std::strerror(errno)));
    return;
  }
  if (in_process != nullptr && ::pipe2(row_fds, O_CLOEXEC) != 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    ready_.push_back(failed_row(e_, p, std::string("cannot create a pipe: ") + std::strerror(errno)));
    return;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {fds[0], fds[1], row_fds[0], row_fds[1]}) {
      if (fd >= 0) ::close(fd);
    }
    ready_.push_back(failed_row(e_, p, std::string("cannot fork: ") + std::strerror(errno)));
    return;
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until execv, or until the in-process run (the sweep
    // process starts no threads, so its forked copy may run any code).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);   // a killed sweep takes its points with it
    if (::getppid() != parent) ::_exit(127);
    ::setpgid(0, 0);                      // Ctrl-C reaches the sweep, which then stops its children
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGINT, &dfl, nullptr);
    ::sigaction(SIGTERM, &dfl, nullptr);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    // Nothing else of the sweep's: above all not DIR/.lock, whose flock a child that outlived
    // a kill -9 of the sweep would hold against the --resume that follows.
    int row_fd = -1;
    if (in_process != nullptr) row_fd = row_fds[1] == 3 ? 3 : ::dup2(row_fds[1], 3);
    ::close_range(row_fd == 3 ? 4 : 3, ~0U, 0);
    if (in_process != nullptr) {
      // The fork server: run the point here, in the copy of the sweep process, and send its
      // row (a few hundred bytes) instead of leaving a report for the sweep to read back.
      std::optional<int> code = 1;
      std::string row;
      auto run_point = [&] {
        try {
          nlohmann::ordered_json report;
          code = in_process->run(job, report);
          if (code && *code == 0 && !report.is_null()) row = row_to_jsonl(row_from_report(e_, p, report));
        } catch (...) {
        }
      };
      // On a thread of its own: glibc gives a new thread a malloc arena of its own, so the
      // point allocates from new pages instead of from the free chunks scattered over the heap
      // of the sweep process, each page of which the child would copy (copy-on-write) as
      // malloc touched it (perf: ~90 % of a point's copy-on-write faults were malloc's).
      try {
        std::thread(run_point).join();
      } catch (const std::system_error&) {
        run_point();  // no thread to be had: here, as before
      }
      std::cout.flush();
      std::cerr.flush();
      std::fflush(nullptr);
      if (code) {
        size_t done = 0;
        while (done < row.size()) {
          const ssize_t n = ::write(row_fd, row.data() + done, row.size() - done);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) ::_exit(1);
          done += static_cast<size_t>(n);
        }
        ::_exit(*code);
      }
      // Not runnable in process: `tessera run` itself, which reads the config from its file.
      if (!point_dir) {
        try {
          write_config(p);
        } catch (...) {
          ::_exit(126);
        }
      }
    }
    ::execv(exe.c_str(), argv.data());
    // Tell the parent this is not the point failing but the runner missing.
    char msg[64] = "\x01tessera-sweep: execv failed, errno ";
    size_t len = std::strlen(msg);
    int err = errno;
    char digits[12];
    int nd = 0;
    do {
      digits[nd++] = static_cast<char>('0' + err % 10);
      err /= 10;
    } while (err && nd < 11);
    while (nd) msg[len++] = digits[--nd];
    msg[len++] = '\n';
    [[maybe_unused]] auto n = ::write(2, msg, len);
    ::_exit(127);
  }
  ::close(fds[1]);
  if (row_fds[1] >= 0) ::close(row_fds[1]);
  Child c;
  c.pid = pid;
  c.fd = fds[0];
  c.row_fd = row_fds[0];
  c.point = &p;
  c.started = Clock::now();
  children_.push_back(std::move(c));
}

Row LocalPool::finish(Child& c, int st) {
  const Point& p = *c.point;
  const fs::path dir = settings_.out_dir / "points" / p.id;
  const double secs = std::chrono::duration<double>(Clock::now() - c.started).count();
  Row row;
  if (c.timed_out) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "timed out after %g s (the per-point timeout)", settings_.timeout_s);
    row = failed_row(e_, p, buf);
  } else if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && !c.row.empty()) {
    if (!c.row.empty() && c.row.back() == '\n') c.row.pop_back();
    auto sent = row_from_jsonl(c.row);
    row = sent ? std::move(*sent) : failed_row(e_, p, "tessera run exited 0 but its report is unreadable: the row it sent is not a row");
  } else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
    try {
      const auto report = nlohmann::json::parse(read_no_follow(dir / "report.json"));
      row = row_from_report(e_, p, report);
    } catch (const std::exception& err) {
      row = failed_row(e_, p, std::string("tessera run exited 0 but its report is unreadable: ") + err.what());
    }
  } else {
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127 && c.output.rfind("\x01tessera-sweep: execv failed", 0) == 0) {
      // Not a result of the point: every point would fail the same way. Stop the sweep.
      const int err = std::atoi(c.output.c_str() + c.output.find("errno ") + 6);
      throw std::runtime_error("cannot execute the point runner " + settings_.runner_exe.string() + ": " +
                               std::strerror(err) + " (finished points are saved; rerun with --resume)");
    }
    std::string text = trim(c.output);
    if (WIFEXITED(st)) {
      row = failed_row(e_, p, "exit " + std::to_string(WEXITSTATUS(st)) + (text.empty() ? "" : ": " + text));
    } else {
      const int sig = WTERMSIG(st);
      row = failed_row(e_, p, "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")" +
                                  (text.empty() ? "" : ": " + text));
    }
  }
  if (!settings_.keep_reports) {
    std::error_code ec;
    for (const char* f : {"report.json", "layers.csv", "summary.md"}) fs::remove(dir / f, ec);
    // A failed point's error names its config file (points/<id>/config.yaml:12:3: ...): it
    // stays, as does the error in its row. An ok point in process left nothing to remove.
    if (!row.ok && settings_.in_process != nullptr && !fs::exists(dir / "config.yaml", ec)) {
      try {
        write_config(p);
      } catch (const UnsafeOutputPath&) {
        throw;
      } catch (const std::exception&) {
      }
    }
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", secs);
  log_line(settings_.out_dir, "point " + p.id + " " + (row.ok ? "ok" : "failed") + " " + buf + " s");
  return row;
}

std::vector<Row> LocalPool::poll(int timeout_ms) {
  std::vector<Row> out;
  while (!ready_.empty()) {
    out.push_back(std::move(ready_.front()));
    ready_.pop_front();
  }
  if (children_.empty()) return out;
  if (!out.empty()) timeout_ms = 0;
  if (settings_.timeout_s > 0) {
    for (const auto& c : children_) {
      const double left = settings_.timeout_s - std::chrono::duration<double>(Clock::now() - c.started).count();
      timeout_ms = std::min(timeout_ms, std::max(0, static_cast<int>(left * 1000) + 1));
    }
  }
  std::vector<pollfd> fds;
  std::vector<std::pair<size_t, bool>> which;  // (child, its row pipe)
  for (size_t k = 0; k < children_.size(); ++k) {
    if (!children_[k].eof) {
      fds.push_back({children_[k].fd, POLLIN, 0});
      which.emplace_back(k, false);
    }
    if (children_[k].row_fd >= 0) {
      fds.push_back({children_[k].row_fd, POLLIN, 0});
      which.emplace_back(k, true);
    }
  }
  // With every pipe closed, a short sleep stands in for waiting on the exits.
  const int rc = ::poll(fds.data(), fds.size(), fds.empty() ? std::min(timeout_ms, 5) : timeout_ms);
  if (rc > 0) {
    for (size_t f = 0; f < fds.size(); ++f) {
      if (!(fds[f].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Child& c = children_[which[f].first];
      char buf[65536];
      if (which[f].second) {
        const ssize_t n = ::read(c.row_fd, buf, sizeof buf);
        if (n > 0) {
          c.row.append(buf, static_cast<size_t>(n));
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          ::close(c.row_fd);
          c.row_fd = -1;
        }
        continue;
      }
      const ssize_t n = ::read(c.fd, buf, sizeof buf);
      if (n > 0) {
        c.output.append(buf, static_cast<size_t>(n));
        if (c.output.size() > 2 * kMaxOutput) c.output.erase(0, c.output.size() - kMaxOutput);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        c.eof = true;
        ::close(c.fd);
        c.fd = -1;
      }
    }
  }
  for (auto& c : children_) {
    if (settings_.timeout_s > 0 && !c.timed_out &&
        std::chrono::duration<double>(Clock::now() - c.started).count() > settings_.timeout_s) {
      c.timed_out = true;
      ::kill(c.pid, SIGKILL);
    }
  }
  for (size_t k = 0; k < children_.size();) {
    Child& c = children_[k];
    int st = 0;
    if ((c.eof || c.timed_out) && (c.row_fd < 0 || c.timed_out) && ::waitpid(c.pid, &st, WNOHANG) == c.pid) {
      for (int* fd : {&c.fd, &c.row_fd}) {
        // Drain what is left (a timed-out child).
        if (*fd >= 0) ::close(*fd);
        *fd = -1;
      }
      if (c.output.size() > kMaxOutput) c.output.erase(0, c.output.size() - kMaxOutput);
      out.push_back(finish(c, st));
      children_.erase(children_.begin() + static_cast<std::ptrdiff_t>(k));
      continue;
    }
    ++k;
  }
  return out;
}

// ---------------------------------------------------------------------------------------

Progress::Progress(std::string name, size_t total, size_t already_done, bool quiet)
    : name_(std::move(name)), total_(total), done_(already_done), quiet_(quiet), tty_(::isatty(2) != 0) {
  start_ = last_print_ = Clock::now();
}

void Progress::add(const Row& row) {
  ++done_;
  ++session_done_;
  if (!row.ok) {
    ++failed_;
    if (is_environment_failure(row.error)) ++environment_failed_;
    if (first_error_.empty()) {
      first_error_ = row.error;
      if (!quiet_) {
        std::string msg = row.error;  // in full: the cause is often at the end
        for (char& ch : msg) {
          if (ch == '\n') ch = ' ';
        }
        std::cerr << (tty_ ? "\r\x1b[K" : "") << "sweep " << name_ << ": point " << row.point << " failed: " << msg
                  << "\n";
      }
    }
  }
  print(false);
}

void Progress::print(bool force) {
  if (quiet_) return;
  const auto now = Clock::now();
  const double since_print = std::chrono::duration<double>(now - last_print_).count();
  if (!force && since_print < (tty_ ? 0.2 : 10.0)) return;
  last_print_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(session_done_) / elapsed : 0;
  const size_t left = total_ > done_ ? total_ - done_ : 0;
  char buf[256];
  std::snprintf(buf, sizeof buf, "sweep %s: %zu/%zu done, %zu failed, %.2f points/s, ETA %s", name_.c_str(), done_,
                total_, failed_, rate, rate > 0 ? format_duration(static_cast<double>(left) / rate).c_str() : "?");
  std::cerr << (tty_ ? "\r\x1b[K" : "") << buf << (tty_ ? "" : "\n") << std::flush;
}

void Progress::finish(const fs::path& out_dir) {
  // Even with -q: the exit code alone would not say what to do.
  if (environment_failed_) {
    std::cerr << "sweep " << name_ << ": " << environment_failed_
              << " of the failures are the environment's (out of disk space or memory, killed by a signal from "
                 "outside, a stalled MPI rank), not the points': rerun with --resume to run them again\n";
  }
  if (quiet_) return;
  print(true);
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", elapsed);
  std::cerr << (tty_ ? "\n" : "") << "sweep " << name_ << ": " << session_done_ << " points run in " << buf << " s ("
            << failed_ << " failed); results: " << (out_dir / "results.jsonl").string() << ", "
            << (out_dir / "results.csv").string() << "\n";
}

// ---------------------------------------------------------------------------------------

void compact_heap_before_forking() {
  // Loading the experiment and a resume's rows leave the heap full of small free chunks; a
  // child whose allocator later consolidates them writes to (and so copies) pages all over the
  // parent's heap, a cost per point that grows with the sweep (issue 35). Returned to the
  // system once here, they are not the children's to touch.
  ::malloc_trim(0);
}

int run_local(const Experiment& e, const RunSettings& settings, ResultStore& store, bool quiet) {
  compact_heap_before_forking();
  std::vector<const Point*> pending;
  for (const auto& p : e.points) {
    if (!store.done().count(p.id)) pending.push_back(&p);
  }
  const size_t already = e.points.size() - pending.size();
  if (!quiet) {
    std::cerr << "sweep " << e.name << ": " << e.points.size() << " points";
    if (already) std::cerr << " (" << already << " already done)";
    std::cerr << ", " << settings.jobs << " at a time, in " << settings.out_dir.string() << "\n";
  }
  log_line(settings.out_dir, "start: local runner, " + std::to_string(settings.jobs) + " jobs, " +
                                 std::to_string(pending.size()) + " points to run");
  Progress progress(e.name, e.points.size(), already, quiet);
  FailureTally failures;
  LocalPool pool(e, settings);
  size_t next = 0, finished = 0;
  while ((next < pending.size() || pool.running() > 0) && !interrupted()) {
    while (pool.has_room() && next < pending.size() && !interrupted()) pool.start(*pending[next++]);
    for (const Row& row : pool.poll(200)) {
      store.append(row);
      progress.add(row);
      failures.add(row);
      // The CPU so far, every kCpuLogPoints points: whether a point costs more late in a long
      // sweep than early (bench/sweep_scale.py reads these lines).
      if (++finished % kCpuLogPoints == 0) log_line(settings.out_dir, std::to_string(finished) + " points run; " + cpu_usage_text());
    }
    store.sync_if_due();
  }
  store.sync();
  if (settings.in_process != nullptr && settings.in_process->programs_compiled) {
    log_line(settings.out_dir, "programs compiled in the sweep process (shared by its points): " +
                                   std::to_string(settings.in_process->programs_compiled()));
  }
  if (interrupted()) {
    pool.kill_all();
    log_line(settings.out_dir, "interrupted");
    std::cerr << "\nsweep " << e.name << ": interrupted; finished points are saved, rerun with --resume to continue\n";
    return 130;
  }
  log_line(settings.out_dir, "done; " + cpu_usage_text());
  progress.finish(settings.out_dir);
  const int code = sweep_exit_code(progress.failed(), progress.environment_failed());
  std::cerr << failures.summary(e.name, e.points.size(), code);  // even with -q: the exit code alone says too little
  return code;
}

}  // namespace tessera::sweep
