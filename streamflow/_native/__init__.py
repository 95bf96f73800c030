"""Native code: the C image-processing extension (``_imgproc``) and its binding (``imgproc``);
``_warp`` / ``warp`` (affine, perspective and remap warps);
``host_build``: CUDA-style kernel sources compiled as host C++ (CI checks of the GPU kernels,
and the CPU build of generated element-wise kernels)."""
