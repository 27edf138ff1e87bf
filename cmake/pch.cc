// The host of the shared precompiled headers (cmake/PipeprofTargets.cmake): nothing of its own.
