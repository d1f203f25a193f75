#pragma once
// Published energy and area figures as data, and the rules that move them between
// technology nodes (docs/energy.md). Every number here names its source next to it in
// energy_tables.cpp; ../shared/reference/energy-serving.md collects them. The config
// loader (energy_config.cpp) takes its per-technology defaults from these tables; the
// energy model itself (sim/energy) only multiplies counts by the resolved values.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/common/energy_class.h"

namespace tessera::energy_tables {

// ---------------------------------------------------------------- node scaling
// A. Stillmaker, B. Baas, "Scaling equations for the accurate prediction of CMOS device
// performance from 180 nm to 7 nm", Integration 58 (2017): per node an area factor and an
// energy polynomial a*Vdd^2 + b*Vdd + c, tabulated for 130, 90, 65, 45, 32, 20, 16, 14,
// 10 and 7 nm. Between two tabulated nodes the factors are interpolated linearly in nm.
inline constexpr double kMinNodeNm = 7;    // the tables' range: no extrapolation
inline constexpr double kMaxNodeNm = 130;

// Energy of a logic operation at `to_nm` relative to `from_nm`, both at `vdd_v`.
double logic_energy_scale(double from_nm, double to_nm, double vdd_v);
// Area of logic at `to_nm` relative to `from_nm`.
double logic_area_scale(double from_nm, double to_nm);

// SRAM follows the logic rule down to kSramLogicFloorNm; below it, energy scales by
// sqrt(node ratio), area linearly and leakage by sqrt(node ratio) x 0.79 (FinFET), the
// rule Accelergy's hwcomponents-cacti wrapper applies below CACTI's 22 nm tables
// (citing IRDS 2016/2017/2022), because bit cells stopped shrinking with logic.
inline constexpr double kSramLogicFloorNm = 22;
double sram_energy_scale(double from_nm, double to_nm, double vdd_v);
double sram_leakage_scale(double from_nm, double to_nm, double vdd_v);
double sram_area_scale(double from_nm, double to_nm);

// Supply voltage: dynamic energy goes with Vdd^2 (C V^2), applied on top of the node rule
// when a table's voltage differs from the config's.
inline double vdd_energy_scale(double from_v, double to_v) { return (to_v / from_v) * (to_v / from_v); }

// ---------------------------------------------------------------- SRAM (CACTI 7)
// CACTI 7 runs (HewlettPackard/cacti, scratch RAM, one read/write port, design objective
// weighted to dynamic power, 360 K; method in energy-serving.md Sec. 1.3) at 32 nm.
inline constexpr double kSramTableNodeNm = 32;
inline constexpr double kSramTableVdd = 0.9;  // CACTI's 32 nm itrs-hp/lop devices run near 0.9 V; used only for the Vdd^2 term

enum class SramCell { kHp, kLop, kLstp };  // CACTI itrs-hp, itrs-lop, itrs-lstp cells
std::optional<SramCell> parse_sram_cell(std::string_view s);
std::string_view sram_cell_name(SramCell c);

struct SramFigures {
  double read_pj_per_byte = 0;
  double write_pj_per_byte = 0;
  double leakage_w = 0;  // whole array
  double area_mm2 = 0;   // data array (no periphery overhead)
};
// One array of `capacity_bytes` accessed `access_bytes` at a time, at kSramTableNodeNm.
// Interpolated linearly in log2(capacity) within one access width, then in
// log2(width) between widths; clamped below the smallest capacity, extrapolated along
// the last segment above the largest. Non-decreasing in capacity.
SramFigures sram_at_table_node(uint64_t capacity_bytes, int64_t access_bytes, SramCell cell);

// ---------------------------------------------------------------- logic (45 nm, 0.9 V)
// M. Horowitz, "Computing's energy problem (and what we can do about it)", ISSCC 2014,
// as reproduced in stillwater-sc/esim energysim/database/energy.py.
inline constexpr double kHorowitzNodeNm = 45;
inline constexpr double kHorowitzVdd = 0.9;
// Energy of one MAC of a native (full-rate) mode "int8xint8", "fp16xfp16", ...; nullopt
// for a pair with no published figure.
std::optional<double> native_mac_pj(std::string_view mode);
// Area (um^2) of one MAC unit of that mode, at 45 nm; nullopt when unknown.
std::optional<double> mac_area_um2(std::string_view mode);
// Energy of one vector-unit element operation of energy class `c` (the class an OpDef row
// names; sim/common/energy_class.h), at 45 nm. kNoVectorWork has none: std::logic_error.
double vector_op_pj(EnergyClass c);

// Aladdin (harvard-acc/ALADDIN, ISCA'14) register energy per bit at 40 nm, as carried
// in Accelergy-Project/hwcomponents-library aladdin.py, and its 32-bit adder (0.21 pJ).
inline constexpr double kAladdinNodeNm = 40;
inline constexpr double kAladdinRegisterPjPerBit = 0.009;
inline constexpr double kAladdinAdd32Pj = 0.21;
// Aladdin's figures run 2-5x above Horowitz's for the same operation (energy-serving.md
// Sec. 1.2: "pick one family per study"). Tessera's arithmetic is Horowitz's, so the
// register figure is brought into that family by the ratio of the two families' 32-bit
// adders at 40 nm (Horowitz 0.1 pJ at 45 nm, node-scaled): the per-bit energy of a
// register in Horowitz's family, at 40 nm and `vdd_v`.
double register_pj_per_bit_horowitz_family(double vdd_v);

// ---------------------------------------------------------------- DRAM by technology
struct DramFigures {
  double read_pj_per_bit = 0;        // read burst (I/O of the devices included where the source does)
  double background_pj_per_bit = 0;  // standby power at the interface's peak bit rate, per bit of that rate
  double activation_nj = 0;          // one ACT/PRE pair of a rank (0: included in read_pj_per_bit or unknown)
  int64_t row_bytes = 0;             // a rank's row (page); weights stream, so one ACT per row read
  std::string_view source;
};
// The figures for a weight_memory.technology value (models/memory/technologies.h).
DramFigures dram_figures(std::string_view technology);

}  // namespace tessera::energy_tables
