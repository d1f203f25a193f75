#include "sim/config/energy_tables.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace tessera::energy_tables {
namespace {

// ---------------------------------------------------------------- Stillmaker & Baas (2017)
// The nodes of the paper's tables and, per node, the energy polynomial a*Vdd^2 + b*Vdd + c
// and the area factor from node X to node Y, as tabulated (with the paper's citation) in
// Accelergy-Project/hwcomponents hwcomponents/scaling/techscaling.py.
constexpr std::array<double, 10> kNodes = {130, 90, 65, 45, 32, 20, 16, 14, 10, 7};
constexpr double kEnergyPoly[10][3] = {
    {7.171, -6.709, 2.904},     // 130 nm
    {4.762, -4.781, 2.092},     // 90 nm
    {3.755, -4.398, 1.975},     // 65 nm
    {1.103, -0.362, 0.2767},    // 45 nm
    {0.9559, -0.7823, 0.471},   // 32 nm
    {0.373, -0.1582, 0.04104},  // 20 nm
    {0.2958, -0.1241, 0.03024}, // 16 nm
    {0.2363, -0.09675, 0.02239},// 14 nm
    {0.2068, -0.09311, 0.02375},// 10 nm
    {0.1776, -0.09097, 0.02447},// 7 nm
};
// Area relative to 45 nm: the 45 nm row of the paper's node-to-node area table (its other
// rows are ratios of this one to within rounding, e.g. 32 -> 7 nm: 0.13 = 0.059 / 0.46).
constexpr double kArea45[10] = {6.4, 2.8, 1.5, 1, 0.46, 0.21, 0.19, 0.17, 0.1, 0.059};

// Fractional index of `nm` in kNodes: i + f, f in [0, 1), interpolating linearly in nm
// between the larger node kNodes[i] and the smaller kNodes[i + 1].
double node_index(double nm) {
  if (!(nm >= kMinNodeNm && nm <= kMaxNodeNm)) {
    throw std::invalid_argument("technology node " + std::to_string(nm) + " nm is outside the scaling tables' 7-130 nm");
  }
  for (size_t i = 0; i + 1 < kNodes.size(); ++i) {
    if (nm <= kNodes[i] && nm >= kNodes[i + 1]) return static_cast<double>(i) + (kNodes[i] - nm) / (kNodes[i] - kNodes[i + 1]);
  }
  return static_cast<double>(kNodes.size() - 1);
}

double poly(size_t i, double v) { return kEnergyPoly[i][0] * v * v + kEnergyPoly[i][1] * v + kEnergyPoly[i][2]; }

double energy_factor(double nm, double v) {
  const double x = node_index(nm);
  const auto i = static_cast<size_t>(std::floor(x));
  const double f = x - static_cast<double>(i);
  if (i + 1 >= kNodes.size()) return poly(i, v);
  return poly(i, v) * (1 - f) + poly(i + 1, v) * f;
}

double area_factor(double nm) {
  const double x = node_index(nm);
  const auto i = static_cast<size_t>(std::floor(x));
  const double f = x - static_cast<double>(i);
  if (i + 1 >= kNodes.size()) return kArea45[i];
  return kArea45[i] * (1 - f) + kArea45[i + 1] * f;
}

}  // namespace

double logic_energy_scale(double from_nm, double to_nm, double vdd_v) {
  return energy_factor(to_nm, vdd_v) / energy_factor(from_nm, vdd_v);
}

double logic_area_scale(double from_nm, double to_nm) { return area_factor(to_nm) / area_factor(from_nm); }

namespace {
// The SRAM rule: the logic rule between max(node, floor) nodes, then sqrt / linear / 0.79
// for the part of the way below the floor (a node above the floor has no such part).
double below_floor_ratio(double from_nm, double to_nm) {
  return std::min(to_nm, kSramLogicFloorNm) / std::min(from_nm, kSramLogicFloorNm);
}
}  // namespace

double sram_energy_scale(double from_nm, double to_nm, double vdd_v) {
  return logic_energy_scale(std::max(from_nm, kSramLogicFloorNm), std::max(to_nm, kSramLogicFloorNm), vdd_v) *
         std::sqrt(below_floor_ratio(from_nm, to_nm));
}

double sram_leakage_scale(double from_nm, double to_nm, double vdd_v) {
  const bool from_below = from_nm < kSramLogicFloorNm, to_below = to_nm < kSramLogicFloorNm;
  const double finfet = to_below && !from_below ? 0.79 : !to_below && from_below ? 1 / 0.79 : 1.0;
  return sram_energy_scale(from_nm, to_nm, vdd_v) * finfet;
}

double sram_area_scale(double from_nm, double to_nm) {
  return logic_area_scale(std::max(from_nm, kSramLogicFloorNm), std::max(to_nm, kSramLogicFloorNm)) *
         below_floor_ratio(from_nm, to_nm);
}

// ---------------------------------------------------------------- SRAM
std::optional<SramCell> parse_sram_cell(std::string_view s) {
  if (s == "hp") return SramCell::kHp;
  if (s == "lop") return SramCell::kLop;
  if (s == "lstp") return SramCell::kLstp;
  return std::nullopt;
}

std::string_view sram_cell_name(SramCell c) {
  switch (c) {
    case SramCell::kHp: return "hp";
    case SramCell::kLop: return "lop";
    case SramCell::kLstp: return "lstp";
  }
  return "hp";
}

namespace {

// One CACTI 7 run at 32 nm, itrs-hp cells (energy-serving.md Sec. 1.3, [M]).
struct SramRow {
  double capacity;   // bytes
  double read, write;  // pJ per byte
  double leak_mw;    // whole array: CACTI's leakage per bank x banks
  double area_mm2;   // data array
};
constexpr double KiB = 1024, MiB = 1024 * 1024;
// 64-byte accesses, one bank: the reference series (the widest capacity range).
constexpr SramRow kWidth64[] = {
    {32 * KiB, 0.32, 0.78, 22, 0.07},
    {256 * KiB, 0.75, 4.88, 186, 0.47},
    {1 * MiB, 1.62, 9.89, 741, 1.89},
    {4 * MiB, 3.42, 19.98, 2959, 7.87},
};
// 256-byte accesses: 4 MiB in 4 banks, 16 MiB and 24 MiB (TPU v1's UB) in 32 banks.
constexpr SramRow kWidth256[] = {
    {4 * MiB, 5.74, 9.47, 680.0 * 4, 10.90},
    {16 * MiB, 16.44, 18.30, 527.0 * 32, 43.76},
    {24 * MiB, 17.92, 20.72, 707.0 * 32, 57.50},
};
// 8-byte accesses: one run, 32 KiB.
constexpr SramRow kWidth8[] = {{32 * KiB, 0.46, 2.52, 23, 0.09}};

// Per-byte quantities of a row, for interpolation.
struct PerByte {
  double read, write, leak, area;
};
PerByte per_byte(const SramRow& r) { return {r.read, r.write, r.leak_mw / r.capacity, r.area_mm2 / r.capacity}; }
PerByte lerp(const PerByte& a, const PerByte& b, double t) {
  return {a.read + (b.read - a.read) * t, a.write + (b.write - a.write) * t, a.leak + (b.leak - a.leak) * t,
          a.area + (b.area - a.area) * t};
}
PerByte scale(const PerByte& a, const PerByte& ratio) {
  return {a.read * ratio.read, a.write * ratio.write, a.leak * ratio.leak, a.area * ratio.area};
}
PerByte ratio(const PerByte& a, const PerByte& b) { return {a.read / b.read, a.write / b.write, a.leak / b.leak, a.area / b.area}; }

// Linear in log2(capacity) inside the knots; along the last segment above them; the
// smallest knot's values below them (the reference series), or the reference series'
// shape scaled to this series' first knot (the others).
template <size_t N>
PerByte series_at(const SramRow (&rows)[N], double capacity, const PerByte* reference_here,
                  const PerByte* reference_at_first) {
  const double x = std::log2(capacity);
  if (N == 1 || x <= std::log2(rows[0].capacity)) {
    if (!reference_here) return per_byte(rows[0]);
    return scale(*reference_here, ratio(per_byte(rows[0]), *reference_at_first));
  }
  size_t i = 0;
  while (i + 2 < N && x > std::log2(rows[i + 1].capacity)) ++i;
  const double x0 = std::log2(rows[i].capacity), x1 = std::log2(rows[i + 1].capacity);
  const double t = (x - x0) / (x1 - x0);
  PerByte p = lerp(per_byte(rows[i]), per_byte(rows[i + 1]), t);
  if (t > 1) {  // beyond the last run: energies follow the last segment; leakage and area per byte stay
    const PerByte last = per_byte(rows[N - 1]);
    p.leak = last.leak;
    p.area = last.area;
  }
  return p;
}

PerByte reference_at(double capacity) { return series_at(kWidth64, capacity, nullptr, nullptr); }

template <size_t N>
PerByte width_series(const SramRow (&rows)[N], double capacity) {
  const PerByte here = reference_at(capacity);
  const PerByte first = reference_at(rows[0].capacity);
  if (N == 1) return scale(here, ratio(per_byte(rows[0]), first));
  return series_at(rows, capacity, &here, &first);
}

}  // namespace

SramFigures sram_at_table_node(uint64_t capacity_bytes, int64_t access_bytes, SramCell cell) {
  const double c = static_cast<double>(std::max<uint64_t>(capacity_bytes, 1));
  const double w = std::log2(static_cast<double>(std::max<int64_t>(access_bytes, 1)));
  PerByte p;
  if (w <= 3) {
    p = width_series(kWidth8, c);
  } else if (w <= 6) {
    p = lerp(width_series(kWidth8, c), reference_at(c), (w - 3) / 3);
  } else if (w <= 8) {
    p = lerp(reference_at(c), width_series(kWidth256, c), (w - 6) / 2);
  } else {
    p = width_series(kWidth256, c);
  }
  // Other cell types: the ratios of the paired CACTI runs (same organization, other cell).
  switch (cell) {
    case SramCell::kHp: break;
    case SramCell::kLop:  // 24 MiB, 256 B, 32 banks: lop 2347.0 / hp 4587.6 pJ read, 10.28 / 20.72 write, 144 / 707 mW
      p = scale(p, {2347.0 / 4587.6, 10.28 / 20.72, 144.0 / 707.0, 57.48 / 57.50});
      break;
    case SramCell::kLstp:  // 4 MiB, 64 B, 1 bank: lstp 285.5 / hp 219.1 pJ read, 25.09 / 19.98 write, 1.5 / 2959 mW
      p = scale(p, {285.5 / 219.1, 25.09 / 19.98, 1.5 / 2959.0, 1.0});
      break;
  }
  return SramFigures{p.read, p.write, p.leak * c / 1000.0, p.area * c};
}

// ---------------------------------------------------------------- logic
namespace {
// An fp8 x fp8 pair's product of significand widths (implicit bit included: OCP FP8 E4M3 has
// 3 stored mantissa bits, so 4; E5M2 2, so 3); nullopt for any other pair.
std::optional<double> fp8_pair_significands(std::string_view mode) {
  constexpr std::pair<std::string_view, double> kFp8[] = {{"fp8_e4m3", 4.0}, {"fp8_e5m2", 3.0}};
  for (const auto& [a, pa] : kFp8) {
    for (const auto& [b, pb] : kFp8) {
      if (mode.size() == a.size() + 1 + b.size() && mode.substr(0, a.size()) == a && mode[a.size()] == 'x' &&
          mode.substr(a.size() + 1) == b) {
        return pa * pb;
      }
    }
  }
  return std::nullopt;
}
}  // namespace

std::optional<double> native_mac_pj(std::string_view mode) {
  // Horowitz: 8-bit multiply 0.2 pJ, 32-bit add 0.1 pJ: products summed in 32-bit partial sums.
  if (mode == "int8xint8") return 0.2 + 0.1;
  // Not on the slide: an n x m-bit multiplier scales with n*m (the quadratic width rule of
  // Aladdin/Accelergy's multiplier), from the 8-bit multiply's 0.2 pJ; plus the 32-bit add.
  if (mode == "int8xint16" || mode == "int16xint8") return 0.2 * 2 + 0.1;
  if (mode == "int16xint16") return 0.2 * 4 + 0.1;
  // Horowitz: fp16 multiply 1.1 pJ, fp32 add 0.9 pJ (fp32 accumulation).
  if (mode == "fp16xfp16") return 1.1 + 0.9;
  // UNCONFIRMED: no published bf16 figure; fp16's is used (bf16's 8-bit mantissa multiplier is smaller).
  if (mode == "bf16xbf16") return 1.1 + 0.9;
  // Not on the slide: int8 x int4 by the quadratic width rule above, 0.2 x (8 x 4) / (8 x 8); plus the 32-bit add.
  if (mode == "int8xint4") return 0.2 * 0.5 + 0.1;
  // Not on the slide: fp8 multiplies derived from Horowitz's fp16 multiply (1.1 pJ, an 11 x 11-bit
  // significand product) by the quadratic width rule on the significands (E4M3: 4 bits, E5M2: 3),
  // which keeps fp16's float overhead (exponent add, normalise, round) in proportion; plus
  // Horowitz's fp32 add (0.9 pJ), the float modes' fp32 accumulation.
  if (auto p = fp8_pair_significands(mode)) return 1.1 * (*p) / (11.0 * 11.0) + 0.9;
  // Not on the slide: int8 or int4 weights under 16-bit float activations (weight-only quantization)
  // are converted to the activations' format as they load and run the float MAC: its figure.
  if (mode == "fp16xint8" || mode == "fp16xint4") return 1.1 + 0.9;
  if (mode == "bf16xint8" || mode == "bf16xint4") return 1.1 + 0.9;  // UNCONFIRMED as bf16xbf16: fp16's
  return std::nullopt;
}

std::optional<double> mac_area_um2(std::string_view mode) {
  // Horowitz ISSCC 2014 area figures at 45 nm as widely reproduced (energy-serving.md Sec. 1.7:
  // "verify"): 8-bit multiply 282 um^2, 32-bit add 137, fp16 multiply 1640, fp32 add 4184.
  if (mode == "int8xint8") return 282.0 + 137.0;
  if (mode == "int8xint16" || mode == "int16xint8") return 282.0 * 2 + 137.0;  // quadratic width rule
  if (mode == "int16xint16") return 282.0 * 4 + 137.0;
  if (mode == "fp16xfp16" || mode == "bf16xbf16") return 1640.0 + 4184.0;  // bf16: UNCONFIRMED, fp16's
  // The same derivations as native_mac_pj: quadratic width rule on the multiplier, the adder kept.
  if (mode == "int8xint4") return 282.0 * 0.5 + 137.0;
  if (auto p = fp8_pair_significands(mode)) return 1640.0 * (*p) / (11.0 * 11.0) + 4184.0;
  if (mode == "fp16xint8" || mode == "fp16xint4" || mode == "bf16xint8" || mode == "bf16xint4") return 1640.0 + 4184.0;
  return std::nullopt;
}

double vector_op_pj(EnergyClass c) {
  // Horowitz 45 nm: 32-bit int add 0.1, 32-bit int multiply 3.1, fp32 add 0.9, fp32 multiply 3.7.
  // Assumption: the vector datapath works on 32-bit values, as the activation pipeline
  // drains 32-bit accumulators. One figure per element operation (an op's element-operation
  // count already includes its steps).
  switch (c) {
    case EnergyClass::kAdd32: return 0.1;
    case EnergyClass::kMultiplyAdd32: return 3.1 + 0.1;
    case EnergyClass::kFp32MultiplyAdd: return 3.7 + 0.9;
    case EnergyClass::kNoVectorWork: break;
  }
  throw std::logic_error("energy tables: energy class " + std::string(energy_class_name(c)) +
                         " has no vector-unit operation to price");
}

double register_pj_per_bit_horowitz_family(double vdd_v) {
  const double horowitz_add32_at_40nm = 0.1 * logic_energy_scale(kHorowitzNodeNm, kAladdinNodeNm, vdd_v);
  return kAladdinRegisterPjPerBit * horowitz_add32_at_40nm / kAladdinAdd32Pj;
}

// ---------------------------------------------------------------- DRAM
DramFigures dram_figures(std::string_view t) {
  // DDR3-1600 x8 (DRAMSys memspec MICRON_1Gb_DDR3-1600_8bit_G IDD values, Micron TN-41-01 method,
  // energy-serving.md Sec. 1.2 [D]): read burst 11.1 pJ/bit, background 5.3 pJ/bit at peak rate,
  // ACT/PRE 27.8 pJ/bit of a 64-B access = 14.2 nJ per rank activation; 1 KiB page x 8 devices.
  if (t == "DDR3") return {11.1, 5.3, 27.8 * 512 / 1000, 8192, "DDR3-1600 x8 memspec IDD values [D]"};
  // DDR4-2400 x8 (MICRON_4Gb_DDR4-2400_8bit_A): read 8.8, background 2.7, random 35 pJ/bit ->
  // ACT/PRE (35 - 12) pJ/bit x 512 bit = 11.8 nJ; 1 KiB page x 8 devices. DDR5 and the generic
  // "DRAM": assumption, DDR4's figures (no DDR5 memspec derivation).
  if (t == "DDR4" || t == "DDR5" || t == "DRAM") {
    return {8.8, 2.7, (35.0 - 12.0) * 512 / 1000, 8192,
            t == "DDR4" ? "DDR4-2400 x8 memspec IDD values [D]" : "assumption: DDR4-2400's figures [D]"};
  }
  // LPDDR4-3200 x16 (JEDEC_8Gb_LPDDR4-3200_16bit): read incl. VDDQ 8.5, background 0.7 pJ/bit;
  // activation not derived (0: not counted); 2 KiB page. LPDDR4X/LPDDR5: assumption, LPDDR4's.
  if (t == "LPDDR4" || t == "LPDDR4X" || t == "LPDDR5") {
    return {8.5, 0.7, 0.0, 2048,
            t == "LPDDR4" ? "LPDDR4-3200 x16 memspec IDD values [D]" : "assumption: LPDDR4-3200's figures [D]"};
  }
  // Accelergy/hwcomponents-cacti DRAM.type2energy (system figures, activation and background included).
  if (t == "GDDR5" || t == "GDDR6") {
    return {14.0, 0.0, 0.0, 2048, t == "GDDR5" ? "Accelergy DRAM.type2energy GDDR5" : "assumption: Accelergy's GDDR5 figure"};
  }
  if (t == "HBM2" || t == "HBM2E" || t == "HBM2-PC") return {3.9, 0.0, 0.0, 1024, "Accelergy DRAM.type2energy HBM2"};
  return {8.8, 2.7, (35.0 - 12.0) * 512 / 1000, 8192, "assumption: DDR4-2400's figures [D]"};
}

}  // namespace tessera::energy_tables
