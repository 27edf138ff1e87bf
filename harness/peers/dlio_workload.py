"""A DLIO workload file as the peer loaders read it, and DLIO's metrics, in pipeprof's results format.

What harness/peers/pytorch_dataloader.py (and any other peer run on pipeprof's workloads) shares
with `pipeprof workload`: the workload file (DLIO's keys and defaults, Hydra-style overrides, time
values as numbers or distributions, `pipeprof.scale`), DLIO's listing of the training files, its
steps per epoch, its AU and throughput (docs/workloads.md), and the results document (schema 3)
that `pipeprof compare` and `pipeprof report` read.
"""

import glob
import math
import os
import platform
import statistics
import time

import yaml


class InputError(Exception):
    """Bad input: exit 2 with the message."""


# ---- the workload file -------------------------------------------------------------------------


def apply_overrides(root, overrides):
    """Hydra's grammar, relative to the workload: key=value sets an existing key, +key=value adds,
    ++key=value sets or adds, ~key removes; the `workload.` prefix may be written or left out."""
    for text in overrides:
        o, mode = text, "set"
        if o.startswith("++"):
            o, mode = o[2:], "setadd"
        elif o.startswith("+"):
            o, mode = o[1:], "add"
        elif o.startswith("~"):
            o, mode = o[1:], "remove"
        if (mode == "remove") != ("=" not in o):
            raise InputError('override "%s": expected [+|++]workload.<section>.<key>=<value>' % text)
        path, _, value = o.partition("=")
        if path.startswith("workload."):
            path = path[len("workload."):]
        keys = path.split(".")
        node = root
        for k in keys[:-1]:
            if not isinstance(node.get(k), dict):
                if mode in ("set", "remove"):
                    raise InputError('override "%s": the workload has no `%s`' % (text, k))
                node[k] = {}
            node = node[k]
        key = keys[-1]
        if mode == "remove":
            if key not in node:
                raise InputError('override "%s": the workload has no `%s`' % (text, path))
            del node[key]
            continue
        if mode == "set" and key not in node:
            raise InputError('override "%s": the workload has no `%s` (use ++ to add it)' % (text, path))
        if mode == "add" and key in node:
            raise InputError('override "%s": the workload already has `%s`' % (text, path))
        node[key] = yaml.safe_load(value)


def number(section, name, key, default, minimum=None, whole=False):
    if key not in section:
        return default
    v = section[key]
    try:
        x = float(v)
    except (TypeError, ValueError):
        x = None
    if x is None or (whole and x != math.floor(x)) or (minimum is not None and x < minimum):
        what = "a whole number" if whole else "a number"
        if minimum is not None:
            what += " >= %s" % minimum
        raise InputError("%s.%s: expected %s, got %r" % (name, key, what, v))
    return int(x) if whole else x


def time_value(section, name, key):
    """A DLIO time (seconds): a number, or {mean[, stdev]}, or {type: normal|uniform|gamma|
    exponential|poisson, ...}; returns a function drawing one (its absolute value, as DLIO)."""
    v = section.get(key, 0)
    if not isinstance(v, dict):
        v = {"mean": v}
    if key + "_stdev" in section:
        v = dict(v, stdev=section[key + "_stdev"])
    try:
        kind = v.get("type", "normal" if "stdev" in v else "constant")
        f = {k: float(x) for k, x in v.items() if k != "type"}
    except (TypeError, ValueError):
        raise InputError("%s.%s: expected a time in seconds or a distribution, got %r" % (name, key, v))
    draws = {
        "constant": lambda r: f.get("mean", 0.0),
        "normal": lambda r: r.normal(f["mean"], f.get("stdev", 0.0)) if f.get("stdev", 0.0) > 0 else f["mean"],
        "uniform": lambda r: r.uniform(f["min"], f["max"]),
        "gamma": lambda r: r.gamma(f["shape"], f["scale"]),
        "exponential": lambda r: r.exponential(f["scale"]),
        "poisson": lambda r: float(r.poisson(f["lam"])),
    }
    if kind not in draws:
        raise InputError("%s.%s.type: expected normal, uniform, gamma, exponential or poisson, got %r" % (name, key, kind))
    mean = {"constant": f.get("mean", 0.0), "normal": f.get("mean", 0.0),
            "uniform": (f.get("min", 0.0) + f.get("max", 0.0)) / 2,
            "gamma": f.get("shape", 0.0) * f.get("scale", 0.0), "exponential": f.get("scale", 0.0),
            "poisson": f.get("lam", 0.0)}[kind]
    draw = draws[kind]
    return (lambda r: abs(draw(r))), mean, v


def load_workload(path, overrides, scale):
    try:
        with open(path) as f:
            root = yaml.safe_load(f)
    except OSError as e:
        raise InputError("%s: cannot read the workload file: %s" % (path, e.strerror))
    except yaml.YAMLError as e:
        raise InputError("%s: not a YAML file: %s" % (path, e))
    if not isinstance(root, dict):
        raise InputError("%s: expected a DLIO workload (a mapping of sections)" % path)
    apply_overrides(root, overrides)
    ds = root.get("dataset") or {}
    rd = root.get("data_reader") or root.get("reader") or {}
    tr = root.get("train") or {}
    where = lambda s: "%s: %s" % (path, s)
    w = {"file": path}
    model = root.get("model")
    w["name"] = model.get("name") if isinstance(model, dict) and "name" in model else (
        model if isinstance(model, str) else os.path.splitext(os.path.basename(path))[0])
    fmt = ds.get("format", "tfrecord")
    if fmt != "npz":
        raise InputError("%s: dataset.format: the PyTorch peer reads npz files (DLIO's PyTorch path), got %r" % (path, fmt))
    w["data_folder"] = str(ds.get("data_folder", "./data/")).rstrip("/")
    w["num_files_train"] = number(ds, where("dataset"), "num_files_train", 8, 1, True)
    w["num_samples_per_file"] = number(ds, where("dataset"), "num_samples_per_file", 1, 1, True)
    w["num_subfolders_train"] = number(ds, where("dataset"), "num_subfolders_train", 0, 0, True)
    w["record_length"] = number(ds, where("dataset"), "record_length_bytes",
                                number(ds, where("dataset"), "record_length", 65536.0, 0), 0)
    resize = number(ds, where("dataset"), "record_length_bytes_resize",
                    number(ds, where("dataset"), "record_length_resize", 0.0, 0), 0)
    w["max_dimension"] = int(math.sqrt(resize)) if resize > 0 else int(math.sqrt(w["record_length"]))
    w["batch_size"] = number(rd, where("reader"), "batch_size", 1, 1, True)
    w["read_threads"] = number(rd, where("reader"), "read_threads", 1, 0, True)
    w["prefetch_size"] = number(rd, where("reader"), "prefetch_size", 2, 0, True)
    w["preprocess"], w["preprocess_mean"], _ = time_value(rd, where("reader"), "preprocess_time")
    w["epochs"] = number(tr, where("train"), "epochs", 1, 1, True)
    w["total_training_steps"] = number(tr, where("train"), "total_training_steps", -1, -1, True)
    w["seed"] = number(tr, where("train"), "seed", 123, 0, True)
    w["compute"], w["compute_mean"], w["computation_time"] = time_value(tr, where("train"), "computation_time")
    metric = root.get("metric") or {}
    w["au"] = number(metric, where("metric"), "au", 0.90, 0)
    out_metric = ((root.get("output") or {}).get("metric") or {})
    w["exclude_start"] = number(out_metric, where("output.metric"), "exclude_start_steps", 1, 0, True)
    w["exclude_end"] = number(out_metric, where("output.metric"), "exclude_end_steps", 0, 0, True)
    if scale is None:
        scale = float((root.get("pipeprof") or {}).get("scale", 1))
    if not 0 < scale <= 1:
        raise InputError("--scale: expected a fraction in (0, 1], got %s" % scale)
    w["scale"] = scale
    w["num_files_train"] = max(1, int(round(w["num_files_train"] * scale)))
    return w


def training_files(w):
    pattern = os.path.join(w["data_folder"], "train", "*", "*.npz") if w["num_subfolders_train"] > 1 \
        else os.path.join(w["data_folder"], "train", "*.npz")
    files = sorted(glob.glob(pattern))
    if len(files) < w["num_files_train"]:
        raise InputError("%s: %d training file(s) match %s, the workload needs %d: generate them with "
                         "`pipeprof datagen --workload %s`" % (w["file"], len(files), pattern,
                                                              w["num_files_train"], w["file"]))
    return files[:w["num_files_train"]]


def steps_per_epoch(w, ranks):
    steps = math.floor(w["num_samples_per_file"] * w["num_files_train"] / w["batch_size"] / ranks)
    if w["total_training_steps"] > 0:
        steps = min(steps, w["total_training_steps"])
    return steps


# ---- DLIO's PyTorch path -----------------------------------------------------------------------


def epoch_metrics(w, records, start, end, steps):
    """DLIO's StatsCounter, one accelerator's epoch: AU and throughput (samples/s)."""
    s, e = w["exclude_start"], steps - 1 - w["exclude_end"]
    compute = sum(r[1] for i, r in enumerate(records) if s <= i <= e) / 1e9
    excluded = sum(r[2] for i, r in enumerate(records) if not s <= i <= e) / 1e9
    total = (end - start) / 1e9 - excluded
    if len(records) < 2 or total <= 0:
        return None
    return (compute / total if compute else 0.0), (len(records) - 2) / total * w["batch_size"]


def metrics(w, epochs, ranks):
    steps = steps_per_epoch(w, ranks)
    au, thr, per_rank = [], [], {r: ([], []) for r in range(ranks)}
    waits, walls, reps = [], [], []
    for epoch in sorted(epochs):
        a_sum = t_sum = 0.0
        measured = False
        slowest = 0
        ep_waits, compute = [], 0
        for rank, (start, end, records, complete) in epochs[epoch].items():
            m = epoch_metrics(w, records, start, end, steps)
            slowest = max(slowest, end - start)
            ep_waits += [r[0] for r in records]
            compute += sum(r[1] for r in records)
            if m:
                measured = True
                a_sum += m[0]
                t_sum += m[1]
                per_rank[rank][0].append(100 * m[0])
                per_rank[rank][1].append(m[1])
        if not measured:
            continue
        au.append(100 * a_sum / ranks)
        thr.append(t_sum)
        waits += ep_waits
        walls.append(slowest / 1e6)
        reps.append((slowest / 1e6, ep_waits, compute, all(v[3] for v in epochs[epoch].values())))
    return steps, au, thr, per_rank, waits, reps


def quantile(values, q):
    if not values:
        return 0.0
    v = sorted(values)
    rank = math.ceil(q * len(v))
    return v[min(len(v) - 1, max(rank, 1) - 1)]


def wait_stats(values_ns):
    ms = [x / 1e6 for x in values_ns]
    return {"mean_ms": statistics.fmean(ms) if ms else 0.0, "p50_ms": quantile(ms, 0.5),
            "p99_ms": quantile(ms, 0.99), "max_ms": max(ms) if ms else 0.0}


def pstdev(v):
    return statistics.pstdev(v) if len(v) > 1 else 0.0


def experiment(w, ranks, epochs, interrupted, extra, peer):
    """The run as a results entry of kind "peer". `peer`: {"name", "loader", "format", "description",
    "spec"}, and "id" (default: workload:NAME)."""
    steps, au, thr, per_rank, waits, reps = metrics(w, epochs, ranks)
    ideal_ms = steps * w["compute_mean"] * 1e3
    repetitions = []
    for (wall, ep_waits, compute, complete), epoch_au in zip(reps, au):
        if not complete:
            continue
        # As pipeprof's: the epoch's AU, and every accelerator's samples over its wall time (so
        # that `pipeprof compare` judges the peer on AU and samples/s too).
        samples = len(ep_waits) * w["batch_size"]
        repetitions.append({"wall_ms": wall, "steps": steps, "wait": wait_stats(ep_waits),
                            "step_mean_ms": compute / 1e6 / max(1, len(ep_waits)),
                            "steady_wait_mean_ms": wait_stats(ep_waits[1:])["mean_ms"],
                            "cpu_ms": 0.0, "peak_rss_kb": 0, "au_percentage": epoch_au,
                            "samples": samples,
                            "samples_per_second": samples / (wall / 1e3) if wall > 0 else 0.0})
    walls = sorted(r["wall_ms"] for r in repetitions)
    median_wall = statistics.median(walls) if walls else 0.0
    med = lambda key: statistics.median([r["wait"][key] for r in repetitions]) if repetitions else 0.0
    mean_thr = statistics.fmean(thr) if thr else 0.0
    mean_au = statistics.fmean(au) if au else 0.0
    record = w["record_length"]
    workload = {
        "file": w["file"], "name": w["name"], "loader": peer["loader"], "format": peer["format"],
        "accelerators": ranks, "steps_per_epoch": steps, "batch_size": w["batch_size"],
        "read_threads": w["read_threads"], "computation_time": w["computation_time"],
        "au_threshold": w["au"], "scale": w["scale"], "peer": peer["name"],
        "dlio": {
            "train_au_percentage": au, "train_au_mean_percentage": mean_au,
            "train_au_meet_expectation": "success" if au and mean_au >= w["au"] * 100 else "fail",
            "train_au_stdev_percentage": pstdev(au),
            "train_throughput_samples_per_second": thr,
            "train_throughput_mean_samples_per_second": mean_thr,
            "train_throughput_stdev_samples_per_second": pstdev(thr),
            "train_io_mean_MB_per_second": mean_thr * record / 1024 / 1024,
            "train_io_stdev_MB_per_second": pstdev(thr) * record / 1024 / 1024,
        },
        "per_accelerator": [{"rank": r, "au_percentage": statistics.fmean(v[0]) if v[0] else 0.0,
                             "throughput_samples_per_second": statistics.fmean(v[1]) if v[1] else 0.0}
                            for r, v in sorted(per_rank.items())],
        "wait_ms": {"mean": wait_stats(waits)["mean_ms"], "p50": quantile([x / 1e6 for x in waits], 0.5),
                    "p99": quantile([x / 1e6 for x in waits], 0.99)},
    }
    workload.update(extra)
    return {
        "id": peer.get("id") or "workload:" + w["name"],
        "kind": "peer",
        "description": peer["description"],
        "step": "sleep:%g" % (w["compute_mean"] * 1e3), "epochs": w["epochs"], "part": "C",
        "spec": peer["spec"],
        "repetitions": repetitions, "median_wall_ms": median_wall,
        "median_wait": {k: med(k) for k in ("mean_ms", "p50_ms", "p99_ms", "max_ms")},
        "elements": steps, "ideal_ms": ideal_ms, "bound_ms": None,
        "efficiency": ideal_ms / median_wall if median_wall > 0 else None,
        "seed_ms": None, "documented_ideal_ms": None, "interrupted": interrupted, "stages": [],
        "median_steady_wait_ms": statistics.median([r["steady_wait_mean_ms"] for r in repetitions]) if repetitions else 0.0,
        "ideal_basis": "an epoch's steps x computation_time: every step computing, none waiting (AU 100%)",
        "simulation_note": "a DLIO workload: its ideal is its computation time",
        "workload": workload,
    }


def environment(software):
    """The results document's environment; `software` stands where pipeprof writes its compiler."""
    def read(path):
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return ""
    cpu = next((l.split(":", 1)[1].strip() for l in read("/proc/cpuinfo").splitlines()
                if l.startswith("model name")), "unknown")
    mem = next((int(l.split()[1]) * 1024 for l in read("/proc/meminfo").splitlines()
                if l.startswith("MemTotal")), 0)
    os_name = next((l.split("=", 1)[1].strip('"') for l in read("/etc/os-release").splitlines()
                    if l.startswith("PRETTY_NAME=")), platform.system())
    return {"cpu_model": cpu, "cores": os.cpu_count() or 1, "memory_bytes": mem, "gpus": [],
            "os": os_name, "kernel": platform.release(),
            "compiler": "Python %s, %s" % (platform.python_version(), software),
            "build_type": "python", "git_commit": "unknown", "pipeprof_version": "peer"}


def sleep_overshoot():
    over = []
    for _ in range(10):
        t0 = time.perf_counter()
        time.sleep(0.01)
        over.append((time.perf_counter() - t0 - 0.01) * 1e3)
    stats = {"p50_ms": quantile(over, 0.5), "p99_ms": quantile(over, 0.99), "max_ms": max(over)}
    return {"sleep_ms": 10, "count": len(over),
            **{"plain_" + k: v for k, v in stats.items()}, **{"precise_" + k: v for k, v in stats.items()}}
