"""Device buffers made as a caller of posattn makes them: in the context its kernels on a GPU API
run in (posattn.device_context), through OpenCL's ICD loader (PoCL here) or CUDA's driver API."""
import ctypes
import inspect

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
        self.cl.clEnqueueCopyBuffer.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                                ctypes.c_size_t, ctypes.c_size_t, ctypes.c_uint32, ctypes.c_void_p,
                                                ctypes.c_void_p]
        self.cl.clFinish.argtypes = [ctypes.c_void_p]
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

    def copy(self, dst, src, nbytes):
        """Copies nbytes between two buffers on the device and waits for it."""
        assert self.cl.clEnqueueCopyBuffer(self.queue, src, dst, 0, 0, nbytes, 0, None, None) == 0
        assert self.cl.clFinish(self.queue) == 0

    def release(self):
        for mem in self.buffers:
            self.cl.clReleaseMemObject(mem)
        self.buffers = []


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

    def copy(self, dst, src, nbytes):
        """Copies nbytes between two buffers on the device and waits for it."""
        self._in_context(self.cu.cuMemcpyDtoD_v2, ctypes.c_uint64(dst), ctypes.c_uint64(src), ctypes.c_size_t(nbytes))
        self._in_context(self.cu.cuCtxSynchronize)

    def release(self):
        for pointer in self.buffers:
            self._in_context(self.cu.cuMemFree_v2, ctypes.c_uint64(pointer))
        self.buffers = []


APIS = {"opencl": OpenCL, "cuda": Cuda}


# The float32 operands of posattn's calls that may be device buffers, and their outputs; the
# others (positions, token ids, key lengths, slopes, attention's variant tables) stay host arrays.
DEVICE_INPUTS = ("x", "table", "q", "k", "v", "amplitude", "frequency", "phase", "p0", "W1", "b1", "W2", "b2",
                 "weight", "bias")
OUTPUTS = ("out", "real", "imag")


def to_device_operands(bound, upload, uploaded):
    """Each float32 array a call (bound arguments) may take as a device input or output replaced by
    the DeviceArray of uploaded[id(array)], made by upload(array) once per array (in place, out is
    x itself)."""
    for name in DEVICE_INPUTS + OUTPUTS:
        a = bound.arguments.get(name)
        if isinstance(a, np.ndarray) and a.dtype == np.float32 and a.size:
            if id(a) not in uploaded:
                uploaded[id(a)] = upload(a)
            bound.arguments[name] = uploaded[id(a)][-1]


def through_device_buffers(memory, fn):
    """fn (a posattn call) with every float32 array it is given as a device input or output made a
    device buffer of `memory` (a contiguous copy): outputs are read back into the caller's arrays,
    inputs are checked unchanged, and a returned buffer is returned as the caller's array."""
    signature = inspect.signature(fn)

    def call(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        uploaded = {}  # id of the caller's array: (array, its contiguous copy, the device buffer)
        outputs = {id(bound.arguments.get(name)) for name in OUTPUTS}

        def upload(a):
            copy = np.ascontiguousarray(a)
            return a, copy, posattn.DeviceArray(memory.buffer(copy), a.shape)
        to_device_operands(bound, upload, uploaded)
        result = fn(*bound.args, **bound.kwargs)
        for key, (host, copy, device) in uploaded.items():
            value = memory.read(device.handle, copy)
            if key in outputs:
                host[...] = value
            else:
                np.testing.assert_array_equal(value, copy, err_msg="a device input was modified")
        host_of = {id(device): host for host, _, device in uploaded.values()}
        if isinstance(result, tuple):
            return tuple(host_of.get(id(r), r) for r in result)
        return host_of.get(id(result), result)

    return call


def device_capable_functions():
    """posattn's functions that take device buffers, by name."""
    functions = {name: getattr(posattn, name) for name in posattn.__all__}
    return {name: fn for name, fn in functions.items()
            if inspect.isfunction(fn) and set(inspect.signature(fn).parameters) & set(DEVICE_INPUTS + OUTPUTS)}


def patch_device_buffers(memory, monkeypatch):
    """Every posattn call that takes device buffers runs through_device_buffers(memory, ·)."""
    for name, fn in device_capable_functions().items():
        monkeypatch.setattr(posattn, name, through_device_buffers(memory, fn))
