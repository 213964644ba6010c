"""Device buffers made as a caller of posattn makes them: in the context its kernels on a GPU API
run in (posattn.device_context), through OpenCL's ICD loader (PoCL here) or CUDA's driver API."""
import ctypes

import numpy as np

import posattn


class OpenCL:
    api = "opencl"

    def __init__(self):
        self.cl = ctypes.CDLL("libOpenCL.so.1")
        self.cl.clCreateBuffer.restype = ctypes.c_void_p
        self.cl.clCreateBuffer.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p,
                                           ctypes.POINTER(ctypes.c_int32)]
        for name in ("clEnqueueWriteBuffer", "clEnqueueReadBuffer"):
            getattr(self.cl, name).argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_size_t,
                                               ctypes.c_size_t, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
                                               ctypes.c_void_p]
        self.cl.clReleaseMemObject.argtypes = [ctypes.c_void_p]
        self.context, self.queue = posattn.device_context("opencl")
        self.buffers = []

    def buffer(self, a):
        """A new device buffer holding a copy of C-contiguous array a; its handle."""
        error = ctypes.c_int32()
        mem = self.cl.clCreateBuffer(self.context, 1, a.nbytes, None, ctypes.byref(error))  # CL_MEM_READ_WRITE
        assert error.value == 0 and mem
        self.buffers.append(mem)
        assert self.cl.clEnqueueWriteBuffer(self.queue, mem, 1, 0, a.nbytes, a.ctypes.data, 0, None, None) == 0
        return mem

    def read(self, mem, like):
        """The buffer's bytes as an array shaped like `like`."""
        a = np.empty_like(like)
        assert self.cl.clEnqueueReadBuffer(self.queue, mem, 1, 0, a.nbytes, a.ctypes.data, 0, None, None) == 0
        return a

    def release(self):
        for mem in self.buffers:
            self.cl.clReleaseMemObject(mem)


class Cuda:
    api = "cuda"

    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")
        self.context, self.queue = posattn.device_context("cuda")
        self.buffers = []

    def _in_context(self, call, *args):
        assert self.cu.cuCtxPushCurrent_v2(ctypes.c_void_p(self.context)) == 0
        try:
            assert call(*args) == 0
        finally:
            self.cu.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))

    def buffer(self, a):
        pointer = ctypes.c_uint64()
        self._in_context(self.cu.cuMemAlloc_v2, ctypes.byref(pointer), ctypes.c_size_t(a.nbytes))
        self.buffers.append(pointer.value)
        self._in_context(self.cu.cuMemcpyHtoD_v2, pointer, ctypes.c_void_p(a.ctypes.data), ctypes.c_size_t(a.nbytes))
        return pointer.value

    def read(self, pointer, like):
        a = np.empty_like(like)
        self._in_context(self.cu.cuMemcpyDtoH_v2, ctypes.c_void_p(a.ctypes.data), ctypes.c_uint64(pointer),
                         ctypes.c_size_t(a.nbytes))
        return a

    def release(self):
        for pointer in self.buffers:
            self._in_context(self.cu.cuMemFree_v2, ctypes.c_uint64(pointer))


APIS = {"opencl": OpenCL, "cuda": Cuda}
