"""The variance of every prefix ``[0, t]`` of a hierarchical histogram's consistent leaves
in O(D h) time and O(D) memory (:class:`~deniable.oracles.HierarchicalHistogram`'s
``prefix_variances``, what its quantiles scan).

Hay et al.'s two passes (:func:`~deniable.oracles._hierarchical.consistent_nodes`) treat
every node of a level alike, so the weight of a level-``l`` estimate on a leaf depends only
on the depth ``m`` of their lowest common ancestor, and it factors: ``beta_l gamma_m`` for
``m < l`` (:func:`weight_factors`).  That turns the ``O(h)`` classes of nodes of each of the
``h`` levels (``O(D h^2)`` for all prefixes) into ``O(h)`` terms a prefix
(:func:`prefix_variances_fast`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["PREFIX_CHUNK", "children_sum", "prefix_variances_fast", "weight_factors"]

FloatArray = npt.NDArray[np.float64]

#: Prefixes whose variances :func:`prefix_variances_fast` computes at once (a block that stays
#: in the cache: 2**15 took about half the time of 2**18 or of all 2**22 prefixes at once).
PREFIX_CHUNK = 1 << 15


def children_sum(a: FloatArray, b: int) -> FloatArray:
    """The sums of each ``b`` consecutive entries along the last axis (a node's children).

    Below 8 children numpy's sum over an axis adds in order, ``((a_0 + a_1) + a_2) ...``;
    the same additions over strided views give the same floats several times faster (a
    reduction over a short last axis is slow).  From 8 on numpy sums pairwise: kept."""
    if b >= 8:
        return np.asarray(a.reshape(*a.shape[:-1], -1, b).sum(-1), dtype=np.float64)
    out = np.add(a[..., 0::b], a[..., 1::b])
    for i in range(2, b):
        out += a[..., i::b]
    return out


def weight_factors(alpha: tuple[float, ...], b: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(beta, gamma, d)``: the weight of level ``l``'s estimate of a node (``l = 1..h``)
    on a leaf in :func:`consistent_nodes` (root 0) is ``beta[l-1] gamma[m]`` when their
    lowest common ancestor is at depth ``m < l``, and ``d[l-1]`` when the leaf is below the
    node.

    With ``A_k`` the bottom-up weight of depth ``k`` and ``P_k = prod_(j<k) (1 - A_j)``,
    the bottom-up pass puts ``c_k = A_l P_l / P_k`` on the node's ancestor at depth ``k``;
    the top-down pass gives that ancestor ``A_l P_l f_k`` with ``f_0 = 0``, ``f_(k+1) =
    1 / P_(k+1) + (f_k - 1 / P_(k+1)) / B``, and the leaves that leave its path at depth
    ``m`` get ``A_l P_l (f_m - 1 / P_(m+1)) / B^(h-m)``: a product of a factor of the
    level and one of the depth (the map is the same for every level above ``m``).
    """
    h = len(alpha)
    p = np.ones(h + 2)  # p[k] = P_k, k = 1..h
    for k in range(2, h + 1):
        p[k] = p[k - 1] * (1 - alpha[k - 2])
    f = np.zeros(h + 1)
    for k in range(h):
        f[k + 1] = 1 / p[k + 1] + (f[k] - 1 / p[k + 1]) / b
    beta = np.array([alpha[lvl - 1] * p[lvl] for lvl in range(1, h + 1)])
    gamma = np.array([(f[m] - 1 / p[m + 1]) / float(b) ** (h - m) for m in range(h)])
    d = np.array([beta[lvl - 1] * f[lvl] / float(b) ** (h - lvl) for lvl in range(1, h + 1)])
    return beta, gamma, d


def prefix_variances_fast(
    parts: list[tuple[FloatArray, FloatArray, float]], alpha: tuple[float, ...], b: int
) -> FloatArray:
    """The variance of every prefix ``[0, t]`` of the leaves of :func:`consistent_nodes`
    when level ``l``'s estimates have the covariance ``(diag(a_l) - u_l u_l') / s_l``
    (``parts[l-1] = (a_l, u_l, s_l)``, levels ``1..h``) and are independent across levels:
    O(D h) time, O(D) memory.

    The weight of node ``j``'s estimate (level ``l``) on the prefix is ``w_j(t) = sum_(s
    <= t) g_l(depth of the lowest common ancestor of j and s)``, and ``g_l(m) = beta_l
    gamma_m`` for ``m < l`` (:func:`weight_factors`).  A prefix's variance is ``sum_l
    (sum_j w_j^2 a_j - (u_l' w_l)^2) / s_l``:

    * ``u_l' w_l(t) = sum_(s <= t) rho_l(s)``, ``rho_l`` the leaves of the map applied to
      ``u_l``: a cumulative sum a level;
    * the nodes off ``t``'s path, left or right of it below its ancestor at depth ``delta``,
      share the weight ``beta_l (R_delta(t) - K_delta)`` (left) or ``beta_l R_delta(t)``
      (right), the same function of ``t`` at every level (the weights of a node sum to 0
      over all leaves: the root is fixed), so their ``sum w^2 a / s`` over all levels is
      ``(R - K)^2`` or ``R^2`` times a range sum of the subtree totals of ``beta_l^2 a_l /
      s_l``; the node on the path adds its own term.
    """
    h = len(alpha)
    beta, gamma, diag = weight_factors(alpha, b)
    width = [b ** (h - m) for m in range(h + 1)]  # leaves under a node at depth m
    rho, cum_rho = [], []
    for i, (_, u, _) in enumerate(parts):  # level l = i + 1
        under = [u]  # sums of u below each node at depth l, l - 1, ..., 0
        for _ in range(i + 1):
            under.append(children_sum(under[-1], b))
        under.reverse()
        acc = np.zeros(1)  # sum over depths m of gamma_m (U(ancestor m) - U(ancestor m+1))
        for m in range(i + 1):
            acc = np.repeat(acc + gamma[m] * under[m], b) - gamma[m] * under[m + 1]
        r = beta[i] * acc + diag[i] * u
        rho.append(r)
        cum_rho.append(np.concatenate([[0.0], np.cumsum(r * width[i + 1])]))
    totals: list[FloatArray] = [np.zeros(0)] * h  # subtree totals of beta^2 a / s, depth 1..h
    below = np.zeros(0)
    for i in range(h - 1, -1, -1):
        a, _, scale = parts[i]
        own = beta[i] ** 2 * a / scale
        below = own if i == h - 1 else own + children_sum(below, b)
        totals[i] = np.concatenate([[0.0], np.cumsum(below)])
    cnt = [width[m] - width[m + 1] for m in range(h)]
    k_delta = [gamma[m] * width[m + 1] + sum(gamma[j] * cnt[j] for j in range(m + 1))
               for m in range(h)]  # fmt: skip
    size = width[0]
    out = np.empty(size)
    for first in range(0, size, PREFIX_CHUNK):
        t = np.arange(first, min(first + PREFIX_CHUNK, size), dtype=np.int64)
        total = np.zeros(t.size)
        above = np.zeros(t.size)  # sum over m < delta of gamma_m (part_m - part_(m+1))
        path, part = np.zeros_like(t), t + 1
        for i in range(h):  # delta = i, then the node of level i + 1 on the path
            nxt = t // width[i + 1]
            nxt_part = t - nxt * width[i + 1] + 1
            r = above + gamma[i] * part
            cw = totals[i]
            left = cw[nxt] - cw[path * b]
            right = cw[(path + 1) * b] - cw[nxt + 1]
            total += (r - k_delta[i]) ** 2 * left + r**2 * right
            above += gamma[i] * (part - nxt_part)
            a, _, scale = parts[i]
            on = beta[i] * above + diag[i] * nxt_part
            dot = cum_rho[i][nxt] + rho[i][nxt] * nxt_part
            total += (on**2 * a[nxt] - dot**2) / scale
            path, part = nxt, nxt_part
        out[first : first + t.size] = total
    return out
