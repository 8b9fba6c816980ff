#!/usr/bin/env python3
"""Exact error rates of one-algorithm `--runs auto --expect`, computed independently of ccbench.

Recomputes the design from its definition (docs/statistics.md): the Pocock-type Lan-DeMets
spending function alpha * ln(1 + (e - 1) t), looks at the first run count whose sign-test
minimum 1/2^n fits what has been spent, then every LOOK_EVERY runs (a look that cannot decide
at its increment is skipped and its alpha carried on), the last at max_runs. At a look with
increment a over n runs, the order-statistic bound's depth k is the largest k <= ceil(n/2)
with binom.cdf(k - 1, n, 1/2) <= a (scipy). "median >= T" passes when at least n - k + 1 runs
are >= T, fails when at most k - 1 are; the walk stops at the first decided look.

The count of runs >= T is a binomial random walk with success probability p = P(X >= T), so a
dynamic programme over it gives P(pass), P(fail) and the mean runs exactly. p = 1/2 is the
boundary (the true median exactly on the threshold): there P(pass) and P(fail) are each the
chance of a wrong verdict, and must stay at or below alpha.

Run: /path/to/venv/bin/python scripts/expectation_sequential_exact.py  (needs scipy)
"""
import math
import sys

from scipy.stats import binom, norm

ALPHA = 0.05
LOOK_EVERY = 3


def spent(alpha, t):
    return alpha * math.log(1 + (math.e - 1) * min(max(t, 0.0), 1.0))


def look_times(alpha, max_runs):
    at = lambda n: spent(alpha, n / max_runs)
    first = next((n for n in range(1, max_runs + 1) if 0.5 ** n <= at(n)), None)
    if first is None:
        return []
    return list(range(first, max_runs, LOOK_EVERY)) + [max_runs]


def union_design(alpha, max_runs):
    """The design before: each look judges at its increment of the spending function."""
    at = lambda n: spent(alpha, n / max_runs)
    out, so_far = [], 0.0
    for n in look_times(alpha, max_runs):
        inc = at(n) - so_far
        if not 0.5 ** n <= inc and n != max_runs:
            continue
        out.append((n, inc))
        so_far = at(n)
    return out


def exact_design(alpha, max_runs):
    """Exact boundaries: at each look the deepest k whose exact chance under p = 1/2 of entering
    the pass region for the first time keeps the total within the spending function."""
    at = lambda n: spent(alpha, n / max_runs)
    out, dist, done, used = [], {0: 1.0}, 0, 0.0
    for n in look_times(alpha, max_runs):
        dist = step(dist, n - done, 0.5)
        done = n
        best = 0
        for k in range(1, (n + 1) // 2 + 1):
            if used + sum(pr for c, pr in dist.items() if c >= n - k + 1) <= at(n) * (1 + 1e-12):
                best = k
            else:
                break
        if best == 0:
            if n == max_runs:
                out.append((n, at(n) - used))
            continue
        used += sum(pr for c, pr in dist.items() if c >= n - best + 1)
        # Only the walks that passed leave: one that failed stays, since a later look judges
        # every expectation again (several expectations run until all are decided), so a
        # wrong pass counts wherever the walk enters the pass region.
        dist = {c: pr for c, pr in dist.items() if c < n - best + 1}
        out.append((n, float(binom.cdf(best - 1, n, 0.5))))
    exact_design.spent = used
    return out


def step(dist, steps, p):
    new = {}
    for c, pr in dist.items():
        for j in range(steps + 1):
            new[c + j] = new.get(c + j, 0.0) + pr * binom.pmf(j, steps, p)
    return new


def depth(n, a):
    # take_while: the depths that qualify form a prefix 1..K
    k = 0
    for cand in range(1, (n + 1) // 2 + 1):
        if binom.cdf(cand - 1, n, 0.5) <= a:
            k = cand
        else:
            break
    return k


def exact(p, design):
    """P(pass), P(fail), P(undecided), mean runs for P(X >= T) = p."""
    dist = {0: 1.0}  # count of runs >= T -> probability, among walks still going
    done_runs = 0
    p_pass = p_fail = mean_runs = 0.0
    for n, a in design:
        dist, done_runs = step(dist, n - done_runs, p), n
        k = depth(n, a)
        if k == 0:
            continue
        keep = {}
        for c, pr in dist.items():
            if c >= n - k + 1:
                p_pass += pr
                mean_runs += pr * n
            elif c <= k - 1:
                p_fail += pr
                mean_runs += pr * n
            else:
                keep[c] = pr
        dist = keep
    rest = sum(dist.values())
    mean_runs += rest * done_runs
    return p_pass, p_fail, rest, mean_runs


def main():
    maxes = [int(a) for a in sys.argv[1:]] or [6, 10, 20]
    cv = 0.08
    print(f"one algorithm, --runs auto --expect 'metric >= T', alpha {ALPHA}; exact (binomial walk, scipy)")
    print(f"runs normal around the true median with {cv:.0%} CV; pass/fail at 1.00 are the wrong-verdict rates")
    for m in maxes:
        now = exact_design(ALPHA, m)
        print(f"\nat most {m} runs: chance that a median on the threshold is judged 'pass' at any look (exact design): {exact_design.spent!r}")
        for name, design in [("exact boundaries (ccbench)", now), ("union bound (before)", union_design(ALPHA, m))]:
            print(f"\nat most {m} runs, {name}: looks " + ", ".join(f"{n} (k={depth(n, a)}, level {a:.6f})" for n, a in design))
            print(f"{'true median / T':>16} {'P(X>=T)':>8} {'pass':>10} {'fail':>10} {'undecided':>9} {'mean runs':>9}")
            for ratio in [0.90, 0.95, 1.00, 1.05, 1.10]:
                p = 0.5 if ratio == 1.0 else float(norm.sf(1.0, loc=ratio, scale=cv * ratio))
                pp, pf, pu, mr = exact(p, design)
                print(f"{ratio:>16.2f} {p:>8.4f} {pp:>10.8f} {pf:>10.8f} {pu:>9.4f} {mr:>9.3f}")


if __name__ == "__main__":
    main()
