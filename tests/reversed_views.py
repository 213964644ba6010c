"""Every array a posattn call is given, as a view with negative and padded strides in every outer
axis: the same values read back to front, every other row of a buffer twice as long in each outer
axis (the layout of NumPy's a[::-2] views), with poison between them; the innermost axis stays
contiguous, the layout the kernels take as it is (any other innermost stride is packed into a
copy first, which the harness's strided cases cover). A kernel that took such a view for a
contiguous one (the GPU APIs' flat host-to-device copies once did) reads the poison or the values
in the wrong order."""
import inspect

import numpy as np

import posattn

OUTPUTS = ("out", "real", "imag")


def reversed_view(a):
    """a's values in a view whose every outer stride is negative and twice its dense size."""
    poison = np.nan if a.dtype.kind == "f" else np.iinfo(a.dtype).min if a.dtype.kind in "iu" else 0
    big = np.full(tuple(2 * n for n in a.shape[:-1]) + a.shape[-1:], poison, a.dtype)
    view = big[(slice(None, None, -2),) * (a.ndim - 1)]
    view[...] = a
    return view


def through_reversed_views(fn):
    """fn (a posattn call) with every array argument, and every array in a dict argument, given as
    its reversed_view: outputs are read back into the caller's arrays (in place: out is x's view
    itself), inputs are checked unchanged."""
    signature = inspect.signature(fn)

    def call(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        views = {}  # id of the caller's array: (the array, its view)

        def view_of(a):
            if not isinstance(a, np.ndarray) or a.ndim == 0:
                return a
            if id(a) not in views:
                views[id(a)] = (a, reversed_view(a))
            return views[id(a)][1]
        for name, value in bound.arguments.items():
            if isinstance(value, dict):
                bound.arguments[name] = {key: view_of(v) for key, v in value.items()}
            else:
                bound.arguments[name] = view_of(value)
        outputs = {id(bound.arguments.get(name)) for name in OUTPUTS}
        before = {key: a.copy() for key, (a, view) in views.items() if id(view) not in outputs}
        result = fn(*bound.args, **bound.kwargs)
        for key, (a, view) in views.items():
            if id(view) in outputs:
                a[...] = view
            else:
                np.testing.assert_array_equal(view, before[key], err_msg="an input was modified")
        caller_of = {id(view): a for a, view in views.values()}
        if isinstance(result, tuple):
            return tuple(caller_of.get(id(r), r) for r in result)
        return caller_of.get(id(result), result)

    return call


def patch_reversed_views(monkeypatch):
    """Every posattn function that takes arrays runs through_reversed_views."""
    for name in posattn.__all__:
        fn = getattr(posattn, name)
        if inspect.isfunction(fn) and name not in ("set_num_threads", "rope_frequencies", "alibi_slopes"):
            monkeypatch.setattr(posattn, name, through_reversed_views(fn))
