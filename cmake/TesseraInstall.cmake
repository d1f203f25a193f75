# `cmake --install build --prefix PREFIX` (README "Install"): the tessera executable in
# PREFIX/bin, and under PREFIX/share/tessera the data it finds by name (configs/, with
# baselines/ and hosts/: sim/common/data_path.h), the example workloads and experiments (their
# relative paths, ../configs/..., still hold there), and the Python package with the analysis
# scripts its figures import (python/tessera finds analysis/ beside python/ and the executable
# at PREFIX/bin/tessera). The generated ONNX workloads are not installed: they are hundreds of MB
# of sparse files, made by the build (workloads/onnx/generate_models.py --out DIR makes them anywhere).
include(GNUInstallDirs)
set(_share ${CMAKE_INSTALL_DATADIR}/tessera)
install(TARGETS tessera RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY configs/ DESTINATION ${_share}/configs FILES_MATCHING PATTERN "*.yaml")
install(DIRECTORY workloads/tpu/ DESTINATION ${_share}/workloads/tpu FILES_MATCHING PATTERN "*.yaml")
install(DIRECTORY experiments/ DESTINATION ${_share}/experiments FILES_MATCHING PATTERN "*.yaml" PATTERN "*.md")
install(DIRECTORY python/tessera/ DESTINATION ${_share}/python/tessera FILES_MATCHING PATTERN "*.py")
install(DIRECTORY analysis/ DESTINATION ${_share}/analysis FILES_MATCHING PATTERN "*.py"
        PATTERN "test_*" EXCLUDE PATTERN "fixtures" EXCLUDE PATTERN "notebooks" EXCLUDE PATTERN "__pycache__" EXCLUDE)
