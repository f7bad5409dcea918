"""Runtimes for compiled programs. `liftkit.backends.opencl` runs them with pyopencl; it is
imported on demand so that the rest of liftkit works without an OpenCL installation."""
