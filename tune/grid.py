"""Every valid combination of a kernel's schedule params (its search space), compiled here for a GPU
API into one folder, for a machine that has the GPU but not Halide (a lent GPU host): the adaptive
search of tune.py needs a runner it can call per trial, a grid needs none. Prints, per candidate,
its params and 'library:symbol', the defaults first; tune/measure.py on the GPU host, given those
candidates, times them interleaved on device buffers and prints one JSON line per kernel.

    POSATTN_BUILD=build-gpu .venv/bin/python tune/grid.py posattn_attn_plain_f32 --device cuda --out grid
    (there)  python3 tune/measure.py posattn_attn_plain_f32 $(cut -f2 grid/posattn_attn_plain_f32.tsv) --device cuda

The libraries link build-gpu/'s libposattn by its absolute path here: the GPU host's checkout must
have the same path (the device tool's does).
"""
import argparse
import itertools
import pathlib

import tune


def grid(function, device):
    """The defaults, then every other valid combination of the kernel's params for the device."""
    kind = tune.schedule_kind(tune.manifest()[function])
    _, space_family = tune.family_of(tune.GPU_TARGETS[device], device)
    space = tune.Space(tune.search_space(space_family, kind), tune.constraints(space_family, kind))
    names = list(space.fields)
    combos = [dict(zip(names, values)) for values in itertools.product(*(space.fields[n][1] for n in names))]
    defaults = space.defaults()
    return [defaults] + [p for p in combos if p != defaults and not space.why_invalid(p)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernels", nargs="+", help="kernels.json functions")
    parser.add_argument("--device", required=True, choices=["cuda", "opencl", "vulkan"])
    parser.add_argument("--out", type=pathlib.Path, required=True)
    args = parser.parse_args()
    for function in args.kernels:
        workdir = (args.out / function).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        compiler = tune.Compiler(function, tune.GPU_TARGETS[args.device], workdir)
        lines = []
        for params in grid(function, args.device):
            try:
                lines.append(f"{tune.text(params)}\t{compiler.build(params)}")
            except RuntimeError as e:  # said, and left out of the grid
                print(f"{function} {tune.text(params)}: does not compile: {e}", flush=True)
        (args.out / f"{function}.tsv").write_text("\n".join(lines) + "\n")
        print(f"{function}: {len(lines)} candidates in {workdir}", flush=True)


if __name__ == "__main__":
    main()
