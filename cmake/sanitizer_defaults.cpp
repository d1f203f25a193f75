// Sanitizer defaults compiled into every executable of a TESSERA_SANITIZE build
// (cmake/TesseraSanitize.cmake, docs/reliability.md). Environment variables
// (ASAN_OPTIONS, LSAN_OPTIONS, UBSAN_OPTIONS) still override these.
extern "C" {

// Stack use-after-return checks slow SystemC's coroutine stacks down for no finding.
const char* __asan_default_options() { return "detect_stack_use_after_return=0:strict_string_checks=1"; }

const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1"; }

// LeakSanitizer: only third-party libraries that keep process-lifetime allocations
// they never free. A leak in Tessera's own code is never suppressed here.
const char* __lsan_default_suppressions() {
  return "leak:libsystemc\n"
         "leak:libmpi\n"
         "leak:libopen-pal\n"
         "leak:libopen-rte\n"
         "leak:libhwloc\n"
         "leak:libevent\n"
         "leak:libpmix\n";
}

}  // extern "C"
