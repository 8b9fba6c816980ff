#!/usr/bin/env python3
"""Issue 32: where a Prague-beside-CUBIC share through DualPI2 comes from, from a `ccbench run`
directory (`--flows quic:prague:1,tcp:cubic:1 --aqm dualpi2`, docs/ecn.md). Per run, over the
window both flows are active (from the later flow's first byte plus SKIP seconds to the end):

- each flow's goodput share, packets sent (`segs_out`), smoothed RTT and window W (packets
  sent per second × RTT);
- the probability each saw: Prague's CE-marked fraction (every CE mark is in the L queue: CUBIC
  runs without ECN, so DualPI2 drops its packets instead), CUBIC's dropped fraction;
- the AQM's own base probability p' (`aqm_prob` in the link series): its mean, its RMS, the
  coupled L marks Σ k·p'·(Prague's packets) and classic drops Σ p'²·(CUBIC's packets) it
  implies, so the step's share of the marks is what remains;
- each flow's response-function constant: W·p for Prague (RFC 9332 App. C.2 eq. (6): 2) and
  W·√p for CUBIC (eq. (5), Reno and CUBIC's Reno-friendly region, RFC 9438 §4.3: 1.22);
- RFC 9332 eq. (7)'s rate ratio (1.64 / k)·(R_C / R_L) at the measured RTTs, and at 25 ms for
  Prague once it is RTT-independent, beside the measured ratio.

Usage: scripts/l4s_balance.py OUT [SKIP_S=5] [K=2]"""
import csv, glob, gzip, math, os, sys


def rows(path):
    with gzip.open(path, "rt") as f:
        yield from csv.DictReader(f)


def last_at(series, t):
    """The last row at or before t (rows in time order)."""
    best = None
    for r in series:
        if r["t_us"] > t:
            break
        best = r
    return best


def count(a, b, key):
    return (int(b[key]) - int(a[key])) % (1 << 32)  # TCP_INFO's counters are 32-bit


def analyse(run, skip_s, k):
    tcp = {}
    for r in rows(os.path.join(run, "tcp.csv.gz")):
        r["t_us"] = int(r["t_us"])
        tcp.setdefault(r["socket"], []).append(r)
    good = {}
    for r in rows(os.path.join(run, "goodput.csv.gz")):
        good.setdefault(f"flow-{r['flow']}", []).append((int(r["t_us"]), int(r["bytes"])))
    link = [dict(r, t_us=int(r["t_us"])) for r in rows(os.path.join(run, "link-down.csv.gz"))]
    t0 = max(next(t for t, b in s if b > 0) for s in good.values()) + skip_s * 1e6
    t1 = min(s[-1][0] for s in good.values()) - 0.5e6
    span = (t1 - t0) / 1e6
    inside = [r for r in link if t0 < r["t_us"] <= t1]
    ce = sum(int(r["ce_marks"]) for r in inside)
    drops = sum(int(r["drops_aqm"]) + int(r["drops_buffer"]) for r in inside)
    flows = {}
    for name, s in tcp.items():
        a, b = last_at(s, t0), last_at(s, t1)
        g = good.get(name)
        if a is None or b is None or g is None:
            continue
        (ga, ba), (gb, bb) = [max((x for x in g if x[0] <= t), default=g[0]) for t in (t0, t1)]
        rtts = [int(r["rtt_us"]) for r in s if t0 < r["t_us"] <= t1]
        f = dict(quic=b.get("cwnd_bytes") not in (None, ""), segs=count(a, b, "segs_out"), rtt_ms=sum(rtts) / len(rtts) / 1000, goodput_bps=(bb - ba) * 8 / ((gb - ga) / 1e6))
        f["W"] = f["segs"] / span * f["rtt_ms"] / 1000
        flows[name] = f
    total = sum(f["goodput_bps"] for f in flows.values())
    l = next(f for f in flows.values() if f["quic"])
    c = next(f for f in flows.values() if not f["quic"])
    lname = next(n for n, f in flows.items() if f["quic"])
    cname = next(n for n, f in flows.items() if not f["quic"])
    for f in flows.values():
        f["share"] = f["goodput_bps"] / total
    l["p"], c["p"] = ce / l["segs"], drops / c["segs"]
    out = dict(window=(t0 / 1e6, t1 / 1e6), ce=ce, drops=drops, prague=l, cubic=c)
    out["prague_W_p"] = l["W"] * l["p"]
    out["prague_W_p_at_25ms"] = l["W"] * 25 / l["rtt_ms"] * l["p"]
    out["cubic_W_sqrt_p"] = c["W"] * math.sqrt(c["p"])
    out["eq7_ratio_measured_rtts"] = 1.64 / k * c["rtt_ms"] / l["rtt_ms"]
    out["eq7_ratio_prague_at_25ms"] = 1.64 / k * c["rtt_ms"] / 25.0
    out["measured_ratio"] = l["goodput_bps"] / c["goodput_bps"]
    probs = [(r["t_us"], float(r["aqm_prob"])) for r in inside if r.get("aqm_prob") not in (None, "")]
    if probs:
        exp_l = exp_c = 0.0
        prev = t0
        for t, p in probs:
            pa, pb = last_at(tcp[lname], prev), last_at(tcp[lname], t)
            ca, cb = last_at(tcp[cname], prev), last_at(tcp[cname], t)
            exp_l += min(1.0, k * p) * count(pa, pb, "segs_out")
            exp_c += p * p * count(ca, cb, "segs_out")
            prev = t
        ps = [p for _, p in probs]
        mean = sum(ps) / len(ps)
        out["p_prime_mean"] = mean
        out["p_prime_rms"] = math.sqrt(sum(p * p for p in ps) / len(ps))
        out["coupled_L_marks"] = exp_l
        out["step_marks"] = ce - exp_l
        out["classic_drops_from_p_prime"] = exp_c
    return out


def main():
    out_dir = sys.argv[1]
    skip = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    k = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
    for run in sorted(glob.glob(os.path.join(out_dir, "series", "run-*"))):
        o = analyse(run, skip, k)
        print(f"== {run}: {o['window'][0]:.1f}–{o['window'][1]:.1f} s, {o['ce']} CE marks, {o['drops']} drops")
        for name in ("prague", "cubic"):
            f = o[name]
            print(f"   {name:6} share {f['share']:.3f}  goodput {f['goodput_bps'] / 1e6:.1f} Mbit/s  RTT {f['rtt_ms']:.1f} ms  W {f['W']:.0f} pkts  p {f['p']:.5f}")
        for key, v in o.items():
            if isinstance(v, float):
                print(f"   {key} = {v:.4g}")


if __name__ == "__main__":
    main()
