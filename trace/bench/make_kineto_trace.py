#!/usr/bin/env python3
"""Writes a large PyTorch-profiler (Kineto) style trace for timing `pipeprof analyze`; never commit
its output. Usage: make_kineto_trace.py OUT.json [MEGABYTES (default 500)]

Per training step: ProfilerStep#N, a DataLoader __next__ wait, then operators on the CPU thread
(cpu_op, a python_function span, a cudaLaunchKernel with an ac2g flow to its kernel on one of four
streams, a pageable host-to-device copy every eighth operator) and an Optimizer.step#SGD.step,
with the event fields and argument sets Kineto writes. Deterministic (fixed seed).
"""
import random
import sys

KERNELS = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
    "ampere_sgemm_128x64_tn",
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)",
    "void at::native::(anonymous namespace)::softmax_warp_forward<float, float, float, 10, false>"
    "(float*, float const*, int, int, int)",
]
STREAMS = [7, 13, 21, 28]
OPS_PER_STEP = 200


def us(ns):
    return f"{ns // 1000}.{ns % 1000:03d}"


def main():
    out_path = sys.argv[1]
    target = int(float(sys.argv[2]) * 1e6) if len(sys.argv) > 2 else 500_000_000
    rng = random.Random(7)
    written = 0
    with open(out_path, "w") as out:
        def put(s):
            nonlocal written
            out.write(s)
            written += len(s)

        put('{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}],\n'
            '  "traceEvents": [\n'
            '  {"name": "process_name", "ph": "M", "ts": 0, "pid": 31337, "tid": 0, "args": {"name": "python3"}},\n'
            '  {"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},\n')
        ts = 1_700_000_000_000_000_000
        i = 0
        step = 0
        while written < target:
            step_start = ts
            wait = rng.randrange(100_000, 3_000_000)
            ops = []
            t = ts + wait
            for _ in range(OPS_PER_STEP):
                op_dur = rng.randrange(20_000, 50_000)
                ops.append((t, op_dur))
                t += op_dur + 1_000
            opt_dur = 200_000
            step_end = t + opt_dur
            chunk = [
                f'  {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": 31337, "tid": 31337, '
                f'"ts": {us(step_start)}, "dur": {us(step_end - step_start)}, "args": {{"External id": {i}}}}},\n',
                f'  {{"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", '
                f'"pid": 31337, "tid": 31337, "ts": {us(step_start + 1_000)}, "dur": {us(wait - 2_000)}, "args": {{"External id": {i + 1}}}}},\n',
            ]
            for op_start, op_dur in ops:
                i += 1
                corr = 100_000 + i
                launch = op_start + 3_000
                kernel = KERNELS[rng.randrange(4)]
                stream = STREAMS[rng.randrange(4)]
                k_start = launch + 8_000 + rng.randrange(5_000)
                k_dur = rng.randrange(5_000, 85_000)
                chunk.append(
                    f'  {{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 31337, "tid": 31337, "ts": {us(op_start)}, '
                    f'"dur": {us(op_dur)}, "args": {{"External id": {i}, "Sequence number": {i}, "Fwd thread id": 0, '
                    f'"Record function id": 0, "Input Dims": [[64, 1024], [4096, 1024], [4096]], "Input type": '
                    f'["float", "float", "float"], "Ev Idx": {i}}}}},\n'
                    f'  {{"ph": "X", "cat": "python_function", "name": "torch/nn/modules/linear.py(114): forward", '
                    f'"pid": 31337, "tid": 31337, "ts": {us(op_start - 500)}, "dur": {us(op_dur + 1_000)}, '
                    f'"args": {{"Python parent id": {i}, "Python id": {i + 1}, "Python thread": 0}}}},\n'
                    f'  {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 31337, "tid": 31337, '
                    f'"ts": {us(launch)}, "dur": 4.512, "args": {{"External id": {i}, "cbid": 211, "correlation": {corr}}}}},\n'
                    f'  {{"ph": "s", "id": {corr}, "pid": 31337, "tid": 31337, "ts": {us(launch)}, "cat": "ac2g", "name": "ac2g"}},\n'
                    f'  {{"ph": "X", "cat": "kernel", "name": "{kernel}", "pid": 0, "tid": {stream}, "ts": {us(k_start)}, '
                    f'"dur": {us(k_dur)}, "args": {{"External id": {i}, "queued": 0, "device": 0, "context": 1, '
                    f'"stream": {stream}, "correlation": {corr}, "registers per thread": 128, "shared memory": 49152, '
                    f'"blocks per SM": 1.185185, "warps per SM": 4.740741, "grid": [128, 1, 1], "block": [128, 1, 1], '
                    f'"est. achieved occupancy %": 6}}}},\n'
                    f'  {{"ph": "f", "id": {corr}, "pid": 0, "tid": {stream}, "ts": {us(k_start)}, "cat": "ac2g", '
                    f'"name": "ac2g", "bp": "e"}},\n')
                if i % 8 == 0:
                    chunk.append(
                        f'  {{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, '
                        f'"tid": 7, "ts": {us(k_start + k_dur)}, "dur": 1.024, "args": {{"device": 0, "context": 1, '
                        f'"stream": 7, "correlation": {corr + 50_000_000}, "bytes": 262144, "memory bandwidth (GB/s)": 12.5}}}},\n')
            chunk.append(
                f'  {{"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step", "pid": 31337, "tid": 31337, '
                f'"ts": {us(step_end - opt_dur)}, "dur": {us(opt_dur - 1_000)}, "args": {{}}}},\n')
            put("".join(chunk))
            ts = step_end
            step += 1
        put('  {"name": "thread_name", "ph": "M", "ts": 0, "pid": 31337, "tid": 31337, '
            '"args": {"name": "thread 31337 (python3)"}}\n  ],\n  "traceName": "big.pt.trace.json"\n}\n')
    print(f"{out_path}: {written / 1e6:.1f} MB, {step} steps, {i} operators")


if __name__ == "__main__":
    main()
