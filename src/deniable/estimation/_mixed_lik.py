"""The marginal likelihood of a mixed model with a randomized binary outcome.

Row ``i`` of group ``j`` has the linear predictor ``eta_ij = x_ij' beta + z_ij' b_j`` with
``b_j = L u_j``, ``u_j ~ N(0, I_q)`` and ``L`` the lower-triangular Cholesky factor of the
random-effect covariance ``Sigma = L L'`` (lme4's ``theta``; Bates et al. 2015).  Group
``j`` contributes

    L_j = int exp(h_j(u)) (2 pi)^(-q/2) du,    h_j(u) = sum_i l_ij(eta_ij(u)) - u'u / 2,

with ``l_ij`` the log-likelihood of the randomized report (``_mixed_links.row_pieces``).

* **Laplace**: ``ln L_j ~ h_j(u_j*) - ln det H_j / 2`` at the conditional mode ``u_j*`` of
  ``h_j``, ``H_j = -d2h_j/du2 = I + L' (sum_i z_ij z_ij' (-d2l_ij/deta2)) L`` (Tierney &
  Kadane 1986; lme4's ``nAGQ = 1``).
* **Adaptive Gauss-Hermite** (one scalar random effect): with ``s_j = H_j^(-1/2)`` and the
  ``K`` Gauss-Hermite nodes ``x_k`` and weights ``w_k``,
  ``L_j ~ (2 pi)^(-1/2) sqrt(2) s_j sum_k w_k exp(x_k^2 + h_j(u_j* + sqrt(2) s_j x_k))``
  (Liu & Pierce 1994; Pinheiro & Bates 1995; lme4's ``nAGQ = K``).  ``K = 1`` is Laplace.

The conditional modes of all groups are found at once (vectorized Newton over the groups,
the expected information where the observed one is not positive definite, step halving per
group); group sums are one sparse product.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from deniable.estimation._mixed_links import expected_information, report_pieces

__all__ = ["MarginalLikelihood"]

Array = npt.NDArray[np.float64]


class MarginalLikelihood:
    """``ln L(beta, L)`` of the data by Laplace (``n_agq = 1``) or AGHQ (``n_agq > 1``).

    Keeps the last conditional modes to start the next evaluation from them.
    """

    def __init__(
        self,
        X: Array,
        Z: Array,
        groups: npt.NDArray[np.intp],
        n_groups: int,
        y: Array,
        p1: Array,
        p0: Array,
        link: str,
        n_agq: int = 1,
    ) -> None:
        from scipy import sparse

        self.X, self.Z, self.groups = X, Z, groups
        self.G, self.q = n_groups, Z.shape[1]
        yes = y == 1
        self.a = np.where(yes, p1, 1 - p1)  # P(report | T = 1)
        self.b = np.where(yes, p0, 1 - p0)  # P(report | T = 0)
        self.p1, self.p0, self.link, self.n_agq = p1, p0, link, n_agq
        n = y.size
        self.S = sparse.csr_matrix(
            (np.ones(n), (groups, np.arange(n))), shape=(n_groups, n), dtype=np.float64
        )
        self.u = np.zeros((n_groups, self.q))
        self.evaluations = 0
        if n_agq > 1:
            nodes, weights = np.polynomial.hermite.hermgauss(n_agq)
            self.nodes = nodes
            self.log_weights = np.log(weights) + nodes**2

    # ------------------------------------------------------------------ the modes

    def _sum(self, values: Array) -> Array:
        """Sum the rows of ``values`` (n or n x m) within each group."""
        out: Array = np.asarray(self.S @ values, dtype=np.float64)
        return out

    def _h(self, offset: Array, ZL: Array, u: Array) -> Array:
        eta = offset + np.einsum("ik,ik->i", ZL, u[self.groups])
        ll = report_pieces(self.link, eta, self.a, self.b, derivs=False)[0]
        out: Array = self._sum(ll) - 0.5 * np.einsum("jk,jk->j", u, u)
        return out

    def _curvature(self, ZL: Array, w: Array) -> Array:
        """``I + sum_i (ZL_i ZL_i') w_i`` per group (G x q x q)."""
        q = self.q
        outer = (ZL[:, :, None] * ZL[:, None, :]).reshape(-1, q * q) * w[:, None]
        H = self._sum(outer).reshape(self.G, q, q)
        H += np.eye(q)
        return H

    def modes(
        self, beta: Array, L: Array, *, tol: float = 1e-11, max_iter: int = 100
    ) -> tuple[Array, Array, Array, bool]:
        """Conditional modes ``u*`` (G x q), ``h_j(u*)`` and ``H_j`` at them, and whether
        every group converged."""
        offset = self.X @ beta
        ZL = self.Z @ L
        u = self.u.copy()
        converged = False
        for _ in range(max_iter):
            h, grad, H, _ = self._newton_pieces(offset, ZL, u)
            step = np.linalg.solve(H, grad[:, :, None])[:, :, 0]
            dec = np.einsum("jk,jk->j", grad, step)
            if not np.all(np.isfinite(dec)):
                break
            if float(dec.max()) <= tol:
                converged = True
                u = u + step  # one more Newton step: the mode to O(dec^2), far below tol
                break
            t = np.ones(self.G)
            todo = dec > tol
            cand = u
            for _ in range(60):
                cand = u + (t * todo)[:, None] * step
                hc = self._h(offset, ZL, cand)
                ok = ~todo | (np.isfinite(hc) & (hc >= h + 1e-4 * t * dec))
                if ok.all():
                    break
                t = np.where(ok, t, t / 2)
            u = cand
        self.u = u
        h, _, H, _ = self._newton_pieces(offset, ZL, u)
        return u, h, H, converged

    def _newton_pieces(
        self, offset: Array, ZL: Array, u: Array
    ) -> tuple[Array, Array, Array, Array]:
        """``h_j(u)``, its gradient and ``H_j`` (the expected curvature where the observed
        one is not positive definite), and the linear predictor."""
        eta = offset + np.einsum("ik,ik->i", ZL, u[self.groups])
        ll, score, hess = report_pieces(self.link, eta, self.a, self.b, derivs=True)
        assert score is not None and hess is not None
        h = self._sum(ll) - 0.5 * np.einsum("jk,jk->j", u, u)
        grad = self._sum(ZL * score[:, None]) - u
        H = self._curvature(ZL, -hess)
        bad = np.linalg.eigvalsh(H)[:, 0] <= 1e-10
        if bad.any():  # not concave here: the expected curvature instead
            fisher = expected_information(self.link, eta, self.p1, self.p0)
            H[bad] = self._curvature(ZL, fisher)[bad]
        return h, grad, H, eta

    # ------------------------------------------------------------------ the likelihood

    def group_loglik(self, beta: Array, L: Array) -> Array:
        """``ln L_j`` per group."""
        self.evaluations += 1
        u, h, H, _ = self.modes(beta, L)
        if self.n_agq == 1:
            sign, logdet = np.linalg.slogdet(H)
            out: Array = h - 0.5 * np.where(sign > 0, logdet, np.inf)
            return out
        # AGHQ, q = 1: nodes around each mode, scaled by the mode's curvature
        s = 1.0 / np.sqrt(H[:, 0, 0])
        offset = self.X @ beta
        ZL = self.Z @ L
        terms = np.empty((self.G, self.nodes.size))
        for k, x in enumerate(self.nodes):  # a loop over the nodes, vectorized over rows
            uk = u + (math.sqrt(2) * s * x)[:, None]
            terms[:, k] = self.log_weights[k] + self._h(offset, ZL, uk)
        from scipy.special import logsumexp

        lse: Array = logsumexp(terms, axis=1)
        return lse + np.log(math.sqrt(2) * s) - 0.5 * math.log(2 * math.pi)

    def loglik(self, beta: Array, L: Array) -> float:
        """``ln L = sum_j ln L_j`` (``-inf`` where a report is impossible)."""
        return float(self.group_loglik(beta, L).sum())

    def conditional(self, beta: Array, L: Array) -> tuple[Array, Array]:
        """Conditional modes of the random effects ``b_j = L u_j*`` (G x q) and their
        conditional covariances ``L H_j^-1 L'`` (G x q x q)."""
        u, _, H, _ = self.modes(beta, L)
        b = u @ L.T
        cov = L[None] @ np.linalg.inv(H) @ L.T[None]
        return b, cov
