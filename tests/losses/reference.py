"""Plain-Python references of the losses: explicit loops over pairs, triplets and anchors (float64)."""

import math

import numpy as np


def cos(x, y):
    nx, ny = np.linalg.norm(x), np.linalg.norm(y)
    return 0.0 if nx == 0 or ny == 0 else float(np.dot(x, y) / (nx * ny))


def euc(x, y):
    return float(np.linalg.norm(np.asarray(x, np.float64) - np.asarray(y, np.float64)))


def logsumexp(vals):
    m = max(vals)
    return m + math.log(sum(math.exp(v - m) for v in vals))


def softplus(x):
    return math.log1p(math.exp(-abs(x))) + max(x, 0.0)


def log_sigmoid(x):
    return -softplus(-x)


def mean(vals):
    return sum(vals) / len(vals) if vals else 0.0


def gensim_regression(S, T, valid, exclude_diagonal=True, weights=None):
    num = den = 0.0
    for i in range(len(S)):
        for j in range(len(S)):
            if (exclude_diagonal and i == j) or not (valid[i] and valid[j]):
                continue
            w = 1.0 if weights is None else weights[i][j]
            num += w * (S[i][j] - T[i][j]) ** 2
            den += w
    return num / den if den else 0.0


def triplet(a, p, n, form, margin, dist=euc):
    out = []
    for ai, pi, ni in zip(a, p, n):
        dp, dn = dist(ai, pi), dist(ai, ni)
        out.append(
            {
                "linear": dp - dn,
                "softplus": softplus(dp - dn),
                "hinge": max(0.0, dp - dn + margin),
                "quadratic": dp**2 - dn**2,
            }[form]
        )
    return out


def batch_hard(z, y, valid, margin, soft=False):
    out = []
    for a in range(len(z)):
        if not valid[a]:
            continue
        dp = [euc(z[a], z[p]) for p in range(len(z)) if p != a and valid[p] and y[p] == y[a]]
        dn = [euc(z[a], z[n]) for n in range(len(z)) if valid[n] and y[n] != y[a]]
        if dp and dn:
            g = max(dp) - min(dn)
            out.append(softplus(g) if soft else max(0.0, g + margin))
    return mean(out)


def lifted(z, y, valid, margin, smooth=False):
    out = []
    b = len(z)
    for i in range(b):
        for j in range(i + 1, b):
            if not (valid[i] and valid[j] and y[i] == y[j]):
                continue
            ni = [euc(z[i], z[k]) for k in range(b) if valid[k] and y[k] != y[i]]
            nj = [euc(z[j], z[k]) for k in range(b) if valid[k] and y[k] != y[j]]
            if not ni and not nj:
                continue
            if smooth:
                J = euc(z[i], z[j]) + logsumexp([margin - d for d in ni + nj])
                out.append(0.5 * max(0.0, J) ** 2)
            else:
                out.append(max(0.0, euc(z[i], z[j]) + margin - min(ni + nj)))
    return mean(out)


def infonce(a, p, negs, tau):
    out = []
    for ai, pi, ni in zip(a, p, negs):
        logits = [cos(ai, pi) / tau] + [cos(ai, n) / tau for n in ni]
        out.append(-(logits[0] - logsumexp(logits)))
    return mean(out)


def ntxent(v1, v2, tau):
    z = list(v1) + list(v2)
    n = len(v1)
    out = []
    for i in range(2 * n):
        k = (i + n) % (2 * n)
        denom = [cos(z[i], z[j]) / tau for j in range(2 * n) if j != i]
        out.append(-(cos(z[i], z[k]) / tau - logsumexp(denom)))
    return mean(out)


def cross_view(v, w, tau):
    n = len(v)
    out = []
    for i in range(n):
        logits = [cos(v[i], w[j]) / tau for j in range(n)]
        out.append(-(cos(v[i], w[i]) / tau - (logsumexp(logits) - math.log(n))))
    return mean(out)


def supcon(z, y, valid, tau):
    out = []
    for i in range(len(z)):
        if not valid[i]:
            continue
        P = [p for p in range(len(z)) if p != i and valid[p] and y[p] == y[i]]
        A = [a for a in range(len(z)) if a != i and valid[a]]
        if not P:
            continue
        lse = logsumexp([cos(z[i], z[a]) / tau for a in A])
        out.append(-sum(cos(z[i], z[p]) / tau - lse for p in P) / len(P))
    return mean(out)


def sincere(z, y, valid, tau, average="anchor"):
    per_anchor, per_pair = [], []
    for i in range(len(z)):
        if not valid[i]:
            continue
        P = [p for p in range(len(z)) if p != i and valid[p] and y[p] == y[i]]
        N = [n for n in range(len(z)) if valid[n] and y[n] != y[i]]
        terms = []
        for p in P:
            logits = [cos(z[i], z[p]) / tau] + [cos(z[i], z[n]) / tau for n in N]
            terms.append(-(logits[0] - logsumexp(logits)))
        per_pair += terms
        if terms:
            per_anchor.append(mean(terms))
    return mean(per_anchor if average == "anchor" else per_pair)


def contrastive_pairs(z, y, valid, margin, squared=False):
    out = []
    for i in range(len(z)):
        for j in range(len(z)):
            if i == j or not (valid[i] and valid[j]):
                continue
            d = euc(z[i], z[j])
            if y[i] == y[j]:
                out.append(0.5 * d * d if squared else d)
            else:
                m = max(0.0, margin - d)
                out.append(0.5 * m * m if squared else m)
    return mean(out)


def center(z, y, valid):
    total = 0.0
    for q in set(y[k] for k in range(len(z)) if valid[k]):
        members = [k for k in range(len(z)) if valid[k] and y[k] == q]
        mu = sum(np.asarray(z[k], np.float64) for k in members) / len(members)
        total += sum(float(np.sum((np.asarray(z[k], np.float64) - mu) ** 2)) for k in members)
    return total


def pair_center(z, y, valid, q):
    members = [k for k in range(len(z)) if valid[k] and y[k] == q]
    return sum(euc(z[i], z[j]) ** 2 for i in members for j in members)
