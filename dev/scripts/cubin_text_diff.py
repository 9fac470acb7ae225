#!/usr/bin/env python3
# cubin_text_diff.py — which kernels' machine code differs between two cubins, here, without
# cuobjdump (this machine's toolkit has ptxas but no disassembler): each function's `.text` section
# is compared byte for byte. Why: a change to marlin_stream.cu can move ptxas's schedule of loops
# it does not touch (session 22: one kernel's loop 342 -> 351 instructions a stage pair was worth
# ~3 us per decoder layer), so a change meant to leave a kernel alone is checked to leave its code
# alone; the kernels that did change are the ones to test and time on the GPU.
#
#   nvcc -cubin -O3 -std=c++17 -Icuda -Isrc -gencode=arch=compute_90a,code=sm_90a \
#        cuda/marlin_stream.cu -o /tmp/new.cubin     # and the same in a worktree of the last commit
#   python3 dev/scripts/cubin_text_diff.py /tmp/base.cubin /tmp/new.cubin [--match REGEX]
#
# Prints one line per function: same / DIFF / only-in-A / only-in-B, both sizes and the name
# (demangled and shortened as sass_loop_stats.py prints it), then a count; exits 1 where any
# differs, 2 on a file that is not a 64-bit ELF cubin. Functions in an anonymous namespace are
# matched across files by name with the namespace's per-file hash removed.
import argparse
import os
import re
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sass_loop_stats import readable  # noqa: E402  (the short demangled name its table prints)

ANON = re.compile(r'(\d+)(?=_GLOBAL__N__)')


def without_file_hash(name):
    """nvcc names an anonymous namespace by its file (49_GLOBAL__N__54876aa3_16_marlin_stream_cu_
    07058a5b: a length, then that many characters); the standard mangling's 12_GLOBAL__N_1 instead."""
    m = ANON.search(name)
    if not m:
        return name
    end = m.end() + int(m.group(1))
    return name[:m.start()] + '12_GLOBAL__N_1' + without_file_hash(name[end:])


def text_sections(path):
    """{function name: its .text bytes} of a 64-bit little-endian ELF (a cubin)."""
    try:
        data = open(path, 'rb').read()
    except OSError as e:
        sys.exit(f'cubin_text_diff: {path}: {e.strerror}')
    if data[:4] != b'\x7fELF' or data[4] != 2 or data[5] != 1:
        print(f'cubin_text_diff: {path}: not a 64-bit little-endian ELF file (a cubin from nvcc -cubin)',
              file=sys.stderr)
        sys.exit(2)
    shoff = struct.unpack_from('<Q', data, 0x28)[0]
    entsize, count, names_index = struct.unpack_from('<HHH', data, 0x3a)
    headers = [struct.unpack_from('<IIQQQQIIQQ', data, shoff + i * entsize) for i in range(count)]
    names_at = headers[names_index][4]
    out = {}
    for name_off, kind, _flags, _addr, offset, size, *_ in headers:
        end = data.index(b'\0', names_at + name_off)
        name = data[names_at + name_off:end].decode()
        if name.startswith('.text.'):
            body = b'' if kind == 8 else data[offset:offset + size]  # 8: SHT_NOBITS
            out[without_file_hash(name[len('.text.'):])] = body
    return out


def main():
    ap = argparse.ArgumentParser(description="which functions' machine code differs between two cubins")
    ap.add_argument('a')
    ap.add_argument('b')
    ap.add_argument('--match', default='', help='regex on the (mangled) function name')
    args = ap.parse_args()
    a, b = text_sections(args.a), text_sections(args.b)
    names = sorted(n for n in set(a) | set(b) if re.search(args.match, n))
    counts = {}
    for name in names:
        verdict = ('only-in-A' if name not in b else 'only-in-B' if name not in a
                   else 'same' if a[name] == b[name] else 'DIFF')
        counts[verdict] = counts.get(verdict, 0) + 1
        print(f'{verdict:9}  {len(a.get(name, b"")):7}  {len(b.get(name, b"")):7}  {readable(name)}')
    print(', '.join(f'{n} {v}' for v, n in sorted(counts.items())) or 'no functions')
    sys.exit(0 if set(counts) <= {'same'} else 1)


if __name__ == '__main__':
    main()
