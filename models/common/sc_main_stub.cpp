// libsystemc.so's own main() references sc_main. Tessera's executables have their
// own main and drive SystemC through engine::simulate(), so this is never called.
// Every executable compiles this file (see cmake/TesseraTesting.cmake, sim/cli).
extern "C" int sc_main(int, char**) { return 1; }
