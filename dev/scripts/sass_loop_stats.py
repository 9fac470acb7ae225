#!/usr/bin/env python3
# sass_loop_stats.py — the hot loop of each matching kernel in a CUDA binary or cubin, from its SASS:
# how many instructions, how many of them move values into uniform registers (R2UR) or run on the
# uniform datapath (U*), and the whole kernel's local-memory traffic. Runs where cuobjdump is: the
# GPU machine, or here after dev/scripts/fetch-sass-tools.sh (CUDA 11.8's cuobjdump from Debian, on
# cubins only: it is given a copy with the ELF header in its older ABI; it counts the NVFP4 64-token
# stream loop one instruction shorter than CUDA 13's, 350 / 341 against 351 / 342 for the shipped
# and lead0 builds). Why: in session 12 code added after the stream kernel's loop made ptxas compute
# the wgmma descriptors per thread (344 -> 422 instructions a stage pair, 32 R2UR) and every timing
# of that build 1-5 us slower; check a variant's loop before timing it.
#
#   nvcc -cubin -O3 -std=c++17 -Icuda -Isrc -gencode=arch=compute_90a,code=sm_90a \
#        cuda/marlin_stream.cu -o out/sass/new.cubin          # here, seconds
#   python3 dev/scripts/sass_loop_stats.py out/sass/*.cubin      # there (carry ["out/sass", "dev/scripts"]),
#                                                            # or here after fetch-sass-tools.sh
#
# The loop reported is the shortest backward branch whose body holds a --mark instruction (default
# HGMMA: the wgmma issue), i.e. the innermost hot loop.
import argparse
import collections
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile

INSTR = re.compile(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;')
BRANCH = re.compile(r'\bBRA\s+(?:!?U?P\w+,\s*)?0x([0-9a-f]+)')


# CUDA 11.8's cuobjdump, extracted by dev/scripts/fetch-sass-tools.sh where the toolkit has none.
LOCAL_CUOBJDUMP = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'out', 'sass-tools', 'usr',
                               'bin', 'cuobjdump')


def old_abi_copy(path, tmpdir):
    """A copy of cubin `path` whose ELF header CUDA 11.8's cuobjdump reads: CUDA 12+ writes OSABI
    0x41, ABI version 8 and the SM in e_flags bits 8-15; 11.8 wants OSABI 0x33, version 7 and
    e_flags sm | 0x500 | sm << 16 (what its ptxas writes for sm_90). The code is left as it is.
    Files already in the old ABI are returned as they are."""
    data = bytearray(open(path, 'rb').read())
    if data[:4] != b'\x7fELF' or data[4] != 2 or data[8] != 8:
        return path
    sm = struct.unpack_from('<I', data, 48)[0] >> 8 & 0xff
    data[7], data[8] = 0x33, 7
    struct.pack_into('<I', data, 48, sm | 0x500 | sm << 16)
    copy = os.path.join(tmpdir, os.path.basename(path))
    open(copy, 'wb').write(data)
    return copy


def functions(path):
    """(name, [(address, instruction)]) for every function in the file's SASS."""
    tool = shutil.which('cuobjdump') or (LOCAL_CUOBJDUMP if os.access(LOCAL_CUOBJDUMP, os.X_OK) else None)
    if tool is None:
        sys.exit('sass_loop_stats: no cuobjdump here (the GPU machine has it; '
                 'dev/scripts/fetch-sass-tools.sh brings one for cubins)')
    # CUDA 11.8's copy needs the old ABI, also when it is the one on PATH
    old_tool = os.path.realpath(tool) == os.path.realpath(LOCAL_CUOBJDUMP)
    with tempfile.TemporaryDirectory() as tmpdir:
        readable_copy = old_abi_copy(path, tmpdir) if old_tool else path
        out = subprocess.run([tool, '-sass', readable_copy], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f'sass_loop_stats: cuobjdump failed on {path}: {out.stderr.strip()}')
    for chunk in re.split(r'\n\s*Function : ', out.stdout)[1:]:
        name, body = chunk.split('\n', 1)
        ins = [(int(m.group(1), 16), m.group(2)) for m in map(INSTR.match, body.split('\n')) if m]
        yield name.strip(), ins


def readable(name):
    """The function's name and template arguments, demangled where c++filt is (binutils)."""
    try:
        out = subprocess.run(['c++filt', name], capture_output=True, text=True).stdout.strip()
    except OSError:
        return name[-44:]
    if '>(' in out:
        out = out[:out.rindex('>(') + 1]                # the parameter list
    elif '(' in out:
        out = out[:out.rindex('(')]
    head, sep, tail = out.partition('<')
    out = head.split('::')[-1] + sep + tail
    return out[:44]


def opcode(text):
    return re.sub(r'^@!?U?P\w+\s+', '', text).split()[0].split('.')[0]


def hot_loop(ins, mark):
    """(first address, last address) of the shortest loop holding a `mark` instruction, or None."""
    marks = [a for a, t in ins if mark in t]
    best = None
    for a, t in ins:
        m = BRANCH.search(t)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target < a and any(target <= x <= a for x in marks):
            if best is None or a - target < best[1] - best[0]:
                best = (target, a)
    return best


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `--sass ... | head` ends quietly
    ap = argparse.ArgumentParser(description='the hot loop of each matching kernel in a CUDA binary or cubin')
    ap.add_argument('files', nargs='+')
    ap.add_argument('--match', default='marlin_stream_kernel', help='regex on the (mangled) function name')
    ap.add_argument('--mark', default='HGMMA', help='an instruction the hot loop must hold')
    ap.add_argument('--sass', action='store_true',
                    help="print each matching kernel's instructions, the hot loop's marked '>', instead of the table")
    args = ap.parse_args()
    if args.sass:
        for path in args.files:
            for name, ins in functions(path):
                if re.search(args.match, name):
                    loop = hot_loop(ins, args.mark)
                    print(f'// {path}: {readable(name)}' + ('' if loop else f' (no loop holds {args.mark})'))
                    for a, t in ins:
                        in_loop = loop is not None and loop[0] <= a <= loop[1]
                        print(f"{'>' if in_loop else ' '} {a:05x}  {t}")
        return
    print(f"{'file':28s} {'kernel':44s} {'instr':>6s} {'loop':>5s} {'R2UR':>5s} {'U*':>4s} {'IMAD':>5s} {'LDL':>4s} {'STL':>4s}")
    for path in args.files:
        for name, ins in functions(path):
            if not re.search(args.match, name):
                continue
            loop = hot_loop(ins, args.mark)
            short = readable(name)
            if loop is None:
                print(f'{path:28s} {short:44s} {len(ins):6d}  (no loop holds {args.mark})')
                continue
            body = [opcode(t) for a, t in ins if loop[0] <= a <= loop[1]]
            count = collections.Counter(body)
            uniform = sum(n for op, n in count.items() if op.startswith('U'))
            ldl = sum(1 for _, t in ins if opcode(t) == 'LDL')
            stl = sum(1 for _, t in ins if opcode(t) == 'STL')
            print(f"{path:28s} {short:44s} {len(ins):6d} {len(body):5d} {count['R2UR']:5d} {uniform:4d} {count['IMAD']:5d} {ldl:4d} {stl:4d}")


if __name__ == '__main__':
    main()
