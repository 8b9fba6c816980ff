#!/usr/bin/env python3
"""Issue 17 §1 figures from a `ccbench run` directory (result.json + series/*/tcp.csv.gz):
per run, the sender's median smoothed RTT, Startup's highest pacing rate after the first RTT
sample (as a multiple of the link rate), and the median bandwidth estimate while cruising
(ProbeBW CRUISE for QUIC, ProbeBW for kernel BBR) against the link's payload capacity.

Payload capacity: the link rate times payload / wire bytes per packet — QUIC: the datagram
(final_quic.mtu) over datagram + 28 (UDP and IPv4 headers); TCP: 1448 / 1500 (MSS with
timestamps over the IP packet)."""
import csv, gzip, json, statistics, sys
from collections import defaultdict

def main(out_dir, rate_bps):
    v = json.load(open(f"{out_dir}/result.json"))
    per_cc = defaultdict(list)
    for r in v["runs"]:
        if r["status"] != "complete":
            continue
        rows = list(csv.DictReader(gzip.open(f"{out_dir}/{r['series']['tcp']}", "rt")))
        flow = r["workload"]["flows"][0]
        quic = flow.get("transport") == "quic"
        if quic:
            mtu = flow["final_quic"]["mtu"]
            capacity = rate_bps * mtu / (mtu + 28)
        else:
            capacity = rate_bps * 1448 / 1500
        rtts = [int(x["rtt_us"]) / 1000 for x in rows if int(x["rtt_us"] or 0) > 0]
        startup = [x for x in rows if x["bbr_mode"] == "STARTUP"]
        # After the first RTT sample: rows whose min RTT is known, past the first one.
        startup_pacing = [int(x["pacing_rate_bps"]) / rate_bps for x in startup[1:] if x["pacing_rate_bps"]]
        if quic:
            cruise = [x for x in rows if x["bbr_phase"] == "CRUISE"]
        else:
            cruise = [x for x in rows if x["bbr_mode"] == "PROBE_BW"]
        bw = [int(x["bbr_bw_bps"]) / capacity for x in cruise if x["bbr_bw_bps"]]
        fig = {
            "run": r["index"],
            "rtt_p50_ms": statistics.median(rtts) if rtts else None,
            "metrics_rtt_p50_ms": (r["metrics"] or {}).get("rtt_p50_ms"),
            "startup_pacing_max_x_link": max(startup_pacing) if startup_pacing else None,
            "cruise_bw_median_x_capacity": statistics.median(bw) if bw else None,
            "cruise_samples": len(bw),
            "mtu": flow.get("final_quic", {}).get("mtu") if quic else None,
        }
        per_cc[r["cc"]].append(fig)
    for cc, figs in per_cc.items():
        print(cc)
        for f in figs:
            print("  ", {k: (round(x, 4) if isinstance(x, float) else x) for k, x in f.items()})
        def med(k):
            xs = [f[k] for f in figs if f[k] is not None]
            return round(statistics.median(xs), 4) if xs else None
        print(f"   median over runs: RTT p50 {med('rtt_p50_ms')} ms, Startup pacing max {med('startup_pacing_max_x_link')}× link, cruising bw {med('cruise_bw_median_x_capacity')}× capacity")

if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 50e6)
