"""perf/compare's output: the Markdown tables (busbw per size per system, hoop/peer ratios, the
limits, the spread of the runs) and the gnuplot PNG of busbw against size. Pure formatting: the
runs are measured by perf/compare."""
import os
import shutil
import statistics
import subprocess
import tempfile


def Cell(m):
    """A table figure: 3 decimals, or 2 significant digits below 0.01 (not a misleading 0.000)."""
    if m is None:
        return "-"
    return f"{m:.3f}" if m >= 0.01 or m == 0 else f"{m:.2g}"


def size_name(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


class Report:
    def __init__(self, runs, systems, labels, pairs, memcpy, loop, lim_before, lim_after, repeats, cmdline,
                 collective="allreduce"):
        self.runs, self.systems, self.labels, self.pairs = runs, systems, labels, pairs
        self.collective = collective
        self.memcpy, self.loop, self.lim_before, self.lim_after = memcpy, loop, lim_before, lim_after
        self.repeats, self.cmdline = repeats, cmdline
        self.ranks = sorted({r["ranks"] for r in runs if r["system"] != "floor"})
        # (system, ranks, bytes) -> busbw of every run (sendrecv: osu_bw's bandwidth), and the
        # time of a call (sendrecv: osu_latency's one-way latency)
        self.cells, self.times = {}, {}
        for r in runs:
            self.cells.setdefault((r["system"], r["ranks"], r["bytes"]), []).append(r["busbw"])
            if "time_us" in r:
                self.times.setdefault((r["system"], r["ranks"], r["bytes"]), []).append(r["time_us"])

    def sizes(self, n):
        return sorted({r["bytes"] for r in self.runs if r["ranks"] == n and r["system"] != "floor"})

    def median(self, s, n, b, cells=None):
        v = (self.cells if cells is None else cells).get((s, n, b))
        return statistics.median(v) if v else None

    def spread(self, s, n):
        """The largest (max - min) / median over the sizes, in percent."""
        worst = 0.0
        for b in self.sizes(n):
            v = self.cells.get((s, n, b), [])
            if len(v) > 1 and statistics.median(v) > 0:
                worst = max(worst, 100 * (max(v) - min(v)) / statistics.median(v))
        return worst

    def table(self, n, cells=None):
        """busbw (or, given self.times, the time) per size per system (median of the runs)."""
        head = ["size"] + [self.labels[s] for s in self.systems]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for b in self.sizes(n):
            row = [self.median(s, n, b, cells) for s in self.systems]
            lines.append("| " + " | ".join([size_name(b)] + [Cell(m) for m in row])
                         + " |")
        return "\n".join(lines)

    def ratios(self, n, times=False):
        """hoop's busbw over each peer's, per size; with times, the peer's time over hoop's (so
        above 1 is always hoop ahead)."""
        head = ["size"] + [f"{self.labels[h]} / {self.labels[p]}" for h, p in self.pairs]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for b in self.sizes(n):
            row = [size_name(b)]
            for h, p in self.pairs:
                # busbw is bytes x factor / time, the same for both: the ratio of the times, which
                # keeps its precision where a slow peer's busbw rounds to 0 (Gloo at 64 B).
                if times or (self.collective != "sendrecv" and self.times):
                    a, c = self.median(p, n, b, self.times), self.median(h, n, b, self.times)
                else:
                    a, c = self.median(h, n, b), self.median(p, n, b)
                row.append(self.ratio_cell(a, c))
            lines.append("| " + " | ".join(row) + " |")
        return "\n".join(lines)

    # A ratio this large says more about the peer at that size (a pathological path, a stall)
    # than about hoop: the table flags it rather than let it pass for a speed-up.
    PATHOLOGY = 100

    @staticmethod
    def ratio_cell(a, c):
        if not a or not c:
            return "-"
        r = a / c
        return f"{r:.0f}x (peer pathology?)" if r > Report.PATHOLOGY else f"{r:.2f}x"

    def what(self):
        """The measured call, for titles."""
        return {"allreduce": "allreduce, f32 sum", "reduce": "reduce to root 0, f32 sum",
                "sendrecv": "send/receive between ranks 0 and 1 (osu_latency ping-pong, osu_bw window of 64)",
                "gather": "gather to root 0, f32", "scatter": "scatter from root 0, f32"}.get(
                    self.collective, f"{self.collective}, f32")

    def factor(self):
        """nccl-tests' busbw factor of the collective, as text."""
        return {"allreduce": "2(n-1)/n", "reduce": "1"}.get(self.collective, "(n-1)/n")

    def markdown(self, seconds):
        out = [f"Command: `{self.cmdline}` ({seconds / 60:.1f} min in all). {self.what()}, out of place"
               f"{' (Gloo: in place, its only mode); ' if self.collective == 'allreduce' else '; '}busbw in GB/s "
               f"(nccl-tests: algbw x {self.factor()}), the median of "
               f"{self.repeats} interleaved runs per system; ratios are hoop's busbw over the peer's "
               f"(above 1: hoop is faster).", "",
               f"Limits measured in the same run (before / after): one core's memcpy "
               f"{self.lim_before[0]:.2f} / {self.lim_after[0]:.2f} GB/s; plain TCP sockets over loopback "
               f"(loopback-limit), both directions at once, {self.lim_before[1]:.2f} / "
               f"{self.lim_after[1]:.2f} GB/s per direction (a baseline more than a ceiling: hoop's "
               f"TCP can pass it)."]
        if self.collective == "sendrecv":
            out[0] = (f"Command: `{self.cmdline}` ({seconds / 60:.1f} min in all). {self.what()}; latency in us "
                      f"(half a round trip), bandwidth in GB/s, the median of {self.repeats} interleaved runs per "
                      f"system; ratios: the peer's latency over hoop's, hoop's bandwidth over the peer's (above 1: "
                      f"hoop is faster).")
        for n in self.ranks:
            if self.collective == "sendrecv":
                out += ["", f"#### {n} ranks: latency (us)", "", self.table(n, self.times), ""]
                if self.pairs:
                    out += [f"#### {n} ranks: peer / hoop (latency ratio)", "", self.ratios(n, times=True), ""]
                out += ["", f"#### {n} ranks: bandwidth (GB/s)", "", self.table(n), ""]
            else:
                out += ["", f"#### {n} ranks: busbw (GB/s)", "", self.table(n), ""]
            if self.pairs:
                out += [f"#### {n} ranks: hoop / peer (busbw ratio)", "", self.ratios(n), ""]
                if "peer pathology" in self.ratios(n):
                    out += [f"A ratio above {self.PATHOLOGY}x is marked: the peer was pathologically slow at that "
                            f"size (look at its spread and its own table row), which is no measure of hoop.", ""]
            spreads = ", ".join(f"{self.labels[s]} {self.spread(s, n):.0f}%" for s in self.systems)
            out.append(f"Largest spread of a cell ((max - min) / median over the runs): {spreads}.")
            # The limits stream far more than any cache holds: compare the largest size with them
            # (a cache-resident size can pass them).
            top = self.sizes(n)[-1]
            for s, limit, what in (("hoop-shm", self.memcpy, "one core's memcpy"),
                                   ("hoop-tcp", self.loop, "plain TCP sockets")):
                m = self.median(s, n, top)
                if m:
                    out.append(f"{self.labels[s]} at {size_name(top)}: {m:.2f} GB/s busbw = {m / limit:.2f} x {what}.")
            out += self.floor_lines(n)
        return "\n".join(out) + "\n"

    def floor_lines(self, n):
        """sendrecv: the smallest size's latency against the floor measured in the same repetition
        (pingpong-limit), and hoop shm against vader repetition by repetition."""
        floor = {r["rep"]: r["time_us"] for r in self.runs if r["system"] == "floor" and r["ranks"] == n}
        if not floor:
            return []
        low = self.sizes(n)[0]
        at = {}
        for r in self.runs:
            if r["ranks"] == n and r["bytes"] == low and r["system"] in ("hoop-shm", "mpi-vader"):
                at.setdefault(r["system"], {})[r["rep"]] = r["time_us"]
        out = [f"The floor of a small message between two processes (pingpong-limit: 8 bytes and a sequence word "
               f"in one shared cache line each way, no library), measured in every repetition: median "
               f"{statistics.median(floor.values()):.3f} us one way, {min(floor.values()):.3f} to "
               f"{max(floor.values()):.3f}."]
        for s in ("hoop-shm", "mpi-vader"):
            ratios = [t / floor[k] for k, t in at.get(s, {}).items() if floor.get(k)]
            if ratios:
                out.append(f"{self.labels[s]} at {size_name(low)}: {statistics.median(ratios):.2f} x the floor of "
                           f"its repetition (median over {len(ratios)}).")
        both = [k for k in at.get("hoop-shm", {}) if k in at.get("mpi-vader", {})]
        if both:
            won = sum(at["hoop-shm"][k] <= at["mpi-vader"][k] for k in both)
            out.append(f"{self.labels['hoop-shm']} at {size_name(low)} was at most {self.labels['mpi-vader']}'s latency "
                       f"in {won} of {len(both)} repetitions.")
        return out

    def plot_script(self, n, png, tmp):
        """The gnuplot script for busbw against size for n ranks (data files written into tmp):
        hoop's systems solid, the peers dashed, min-max whiskers over the runs, the legend below,
        and the y axis clipped 20x under hoop's slowest point so one pathological peer does not
        squeeze the rest into a line."""
        plots = []
        hoop_min = None
        for i, s in enumerate(self.systems):
            data = os.path.join(tmp, f"{i}.dat")
            hoop = s.startswith("hoop")
            with open(data, "w") as f:
                for b in self.sizes(n):
                    v = self.cells.get((s, n, b))
                    if v:
                        f.write(f"{b} {statistics.median(v)} {min(v)} {max(v)}\n")
                        if hoop:
                            hoop_min = min(v) if hoop_min is None else min(hoop_min, min(v))
            style = "dt 1 lw 2.5 pt 7" if hoop else "dt 2 lw 1.5 pt 6"
            plots.append(f"'{data}' using 1:2:3:4 with yerrorlines {style} lc {i + 1} title '{self.labels[s]}'")
        plots.append(f"{self.memcpy} with lines dt 3 lc rgb 'black' title 'memcpy, one core'")
        plots.append(f"{self.loop} with lines dt 4 lc rgb 'gray40' title 'loopback TCP, per direction'")
        tics = ", ".join(f'"{size_name(b).replace(" ", "")}" {b}' for b in self.sizes(n))
        floor = hoop_min / 20 if hoop_min else None
        return "\n".join([
            "set terminal pngcairo size 1100,720 font ',11'",
            f"set output '{png}'",
            f"set title '{self.what()}, {n} ranks on one host: busbw, median and min-max of {self.repeats} runs"
            + (f" (y clipped at {floor:.3g} GB/s)'" if floor else "'"),
            "set logscale x 2", "set logscale y 10", f"set xtics ({tics})", "set offsets graph 0.03, graph 0.03, 0, 0",
            f"set yrange [{floor:.6g}:*]" if floor else "set yrange [*:*]",
            "set xlabel 'message size'", "set ylabel 'busbw (GB/s)'", "set grid",
            "set key below horizontal maxcols 3", "plot " + ", \\\n  ".join(plots), ""])

    def plot(self, n, png):
        """Writes busbw against size for n ranks; returns None, or why it could not."""
        if not shutil.which("gnuplot"):
            return "gnuplot not installed (scripts/setup.sh installs gnuplot-nox)"
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run(["gnuplot"], input=self.plot_script(n, png, tmp), text=True, capture_output=True)
            return None if r.returncode == 0 else r.stderr.strip()
