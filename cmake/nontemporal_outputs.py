"""Recompiles a Halide x86 kernel library with its output stores non-temporal.

    nontemporal_outputs.py LIBRARY.a SUBTARGET.bc ...

Halide 21 cannot emit non-temporal stores (its `stream_stores` directive came after the release),
and with ordinary stores each store first reads its cache line: a write-only table moves two bytes
per byte written, x + PE three per two. The generator emits each sub-target of the library as
LLVM bitcode too (`-e static_library,bitcode`); this marks every vector store to a buffer the
pipeline was given as an argument (inputs are never stored to, so these are its outputs)
`!nontemporal`, as Halide's own directive does, fences those stores before each function that
makes them returns (they are weakly ordered), compiles the module with the same CPU, features and
code model Halide used (LLVM >= Halide's, through llvmlite) and replaces the sub-target's object in
the library. Each kernel's instance is picked by the runtime for outputs too large to stay
cached (runtime/src/registry.cpp); a bitcode file in which no output store is found is an error.
"""
import pathlib
import re
import subprocess
import sys

import llvmlite.binding as llvm

FENCE = "call void @llvm.x86.sse.sfence()"


def module_flag(text, name):
    found = re.search(rf'^!\d+ = !{{i32 \d+, !"{name}", (?:!"([^"]*)"|i32 (\d+))}}$', text, re.M)
    if not found:
        raise SystemExit(f"nontemporal_outputs: no module flag {name} (not a Halide module?)")
    return found.group(1) if found.group(1) is not None else int(found.group(2))


def output_tags(text):
    """The TBAA access tags of the argument buffers: Halide names each buffer's TBAA type after it
    (with a `$n` suffix in a generator's later sub-targets), under the root "Halide buffer", and
    the arguments `%<name>.buffer`."""
    unique = lambda name: re.sub(r"\$\d+", "", name)
    definitions = "\n".join(re.findall(r"^define .*$", text, re.M))
    arguments = {unique(a) for a in re.findall(r'%"?([\w.$]+)\.buffer\b', definitions)}
    types = {}  # metadata id -> (name, parent id)
    for node, name, parent in re.findall(r'^!(\d+) = !{!"([^"]*)", !(\d+), i64 0}$', text, re.M):
        types[node] = (name, parent)

    def of_argument(node):
        while node in types:
            name, node = types[node]
            name = unique(name)
            if name in arguments or any(name.startswith(a + ".") for a in arguments):
                return True
        return False

    return {tag for tag, base in re.findall(r"^!(\d+) = !{!(\d+), !\2, i64 0}$", text, re.M) if of_argument(base)}


LABEL = re.compile(r'^("[^"]+"|[\w.$-]+):(\s|$)')
STORE = re.compile(r"^  store <(\d+) x (\w+)> (.*), ptr (%\S+), align (\d+), !tbaa !(\d+)(.*)$")
BYTES = {"float": 4, "i32": 4, "double": 8, "i64": 8, "half": 2, "i16": 2, "i8": 1}


def split_stores(body, tags, nontemporal):
    """One function's lines with each vector store to an output made non-temporal, by the
    alignment of its address (x86's non-temporal vector stores fault where unaligned; LLVM emits
    what the `align` it is told allows): one vector store where aligned to the vector's size;
    16-byte vector stores where a wider vector is aligned to 32 bytes; else 8-byte movnti stores,
    which take any address. Measured on the Intel Xeon (integer table, of the non-temporal fill's
    rate; ordinary stores 47%): at 0 mod 64 one 64-byte store 101%; at 32 mod 64 16-byte stores
    95%, 32-byte ones 46-56%; at 16 or 48 mod 64 (NumPy's large arrays) movnti 75-79%, 16-byte
    stores 58-61%. The block a store was in ends in a new block, so the phis that named it as
    their incoming block name that one."""
    lines, renamed, block, count = [], {}, None, 0
    for line in body:
        label = LABEL.match(line)
        if label:
            block = label.group(1)
        store = STORE.match(line)
        if not (store and store.group(6) in tags and block):
            lines.append(line)
            continue
        lanes, element, value, pointer, given, tag, rest = store.groups()
        width = int(lanes) * BYTES[element]
        n = f"posattn.nt{count}"
        stored = f"store <{lanes} x {element}> {value}, ptr {pointer}"
        lines.append(f"  %{n}.address = ptrtoint ptr {pointer} to i64")
        tests = [(width, width)] + ([(32, 16)] if width > 32 else [])  # (address alignment, store's)
        for test, alignment in (t for t in tests if t[1] > int(given)):
            path = f"{n}.align{test}"
            lines += [f"  %{path}.low = and i64 %{n}.address, {test - 1}",
                      f"  %{path}.ok = icmp eq i64 %{path}.low, 0",
                      f"  br i1 %{path}.ok, label %{path}, label %{path}.not",
                      f"{path}:",
                      f"  {stored}, align {alignment}, !tbaa !{tag}, !nontemporal {nontemporal}{rest}",
                      f"  br label %{n}.done",
                      f"{path}.not:"]
        lines += [f"  {stored}, align {given}, !tbaa !{tag}, !nontemporal {nontemporal}{rest}",
                  f"  br label %{n}.done", f"{n}.done:"]
        renamed[block] = f"{n}.done"
        block = f"{n}.done"
        count += 1
    for old, new in renamed.items():  # the incoming block of a phi is the last block the old one became
        lines = [l.replace(f", %{old} ]", f", %{new} ]") if " = phi " in l else l for l in lines]
    return lines, count


def mark(text):
    """The module with every vector store to an output non-temporal (split_stores), fenced before
    each return of the functions that make them; the number of stores marked."""
    tags = output_tags(text)
    numbered = re.findall(r"^!(\d+) = ", text, re.M)
    nontemporal = f"!{1 + max(map(int, numbered))}"
    result, body, total = [], None, 0
    for line in text.split("\n"):
        if line.startswith("define "):
            body = [line]
        elif body is not None:
            body.append(line)
            if line == "}":
                lines, count = split_stores(body, tags, nontemporal)
                if count:
                    lines = [f"  {FENCE}\n{l}" if re.match(r"^  ret ", l) else l for l in lines]
                result += lines
                total += count
                body = None
        else:
            result.append(line)
    return "\n".join(result) + f"\n{nontemporal} = !{{i32 1}}\ndeclare void @llvm.x86.sse.sfence()\n", total


def compile_bitcode(path):
    text = str(llvm.parse_bitcode(pathlib.Path(path).read_bytes()))
    # Without AMD's SSE4a, whose scalar non-temporal stores (movntss, movntsd) LLVM picks for a
    # znver4 sub-target: bfloat16's avx512_zen4 level runs on Intel CPUs too
    # (runtime/src/cpu_features.cpp). (Each function names its features.)
    text = re.sub(r'"target-features"="([^"]*)"', r'"target-features"="\1,-sse4a"', text)
    text, count = mark(text)
    if not count:
        raise SystemExit(f"nontemporal_outputs: {path}: no vector store to an output buffer found")
    module = llvm.parse_assembly(text)
    module.verify()
    machine = llvm.Target.from_triple(module.triple).create_target_machine(
        cpu=module_flag(text, "halide_mcpu_target"), features=module_flag(text, "halide_mattrs"), opt=3,
        reloc="pic" if module_flag(text, "halide_use_pic") else "static",
        codemodel="large" if module_flag(text, "halide_use_large_code_model") else "default")
    return machine.emit_object(module), count


def main():
    library, bitcodes = pathlib.Path(sys.argv[1]), sys.argv[2:]
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    members = subprocess.run(["ar", "t", str(library)], check=True, capture_output=True, text=True).stdout.split()
    for path in bitcodes:
        # The generator names a sub-target's bitcode <function>-<target>.bc and its library
        # member <library>-<target>.o (a single-target library's only member: <library>.o).
        target = pathlib.Path(path).stem.split("-", 1)[-1]
        member = next((m for m in members if m.endswith(f"-{target}.o")),
                      members[0] if len(members) == 1 and len(bitcodes) == 1 else None)
        if member is None:
            raise SystemExit(f"nontemporal_outputs: {library} has no object for {path}")
        obj, count = compile_bitcode(path)
        object_path = library.parent / member
        object_path.write_bytes(obj)
        subprocess.run(["ar", "r", str(library), str(object_path)], check=True, capture_output=True, cwd=library.parent)
        object_path.unlink()
        print(f"nontemporal_outputs: {member}: {count} output stores non-temporal")


if __name__ == "__main__":
    main()
