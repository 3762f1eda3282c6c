"""What the definitions say the run's files must hold, recomputed (on first use) from the run's raw
inputs - its candidates, per-pair logits and qrels - with the ANCHOR's settings: the three methods'
orders, CE ranks and blend scores, every per-query metric, the evidence groups, the per-query deltas,
every bootstrap replicate from the saved index matrices, and each comparison's statistics."""

from __future__ import annotations

from functools import cached_property

from core.problems import Unreadable

from expected.definitions import (
    METHODS,
    blend_scores,
    capped_recall,
    components,
    first_rel,
    mean,
    mrr,
    ndcg,
    percentile,
    recall,
    seq_sum,
    tie_rule_order,
)


class Expected:
    def __init__(self, run, anchor):
        self.run = run        # what the run says (run_files.RunFiles)
        self.anchor = anchor  # what it must have used (anchors.Anchor)

    @property
    def settings(self) -> dict:
        return self.anchor.settings

    @cached_property
    def metric(self) -> str:
        return f"ndcg@{self.settings['metrics']['ndcg_k']}"

    @cached_property
    def _ranked(self):
        """rrf / ce / blend orders per analysed query, and the CE rank and blend score/rank per pair."""
        k = self.settings["blend_k"]
        orders = {m: {} for m in METHODS}
        r1_of, blend_score, blend_rank = {}, {}, {}
        for q in self.run.analysed:
            cands, lg = self.run.cands[q], self.run.logits[q]
            if set(lg) != set(cands):
                raise Unreadable(self.run.path("pairs"), f"query {q}: the scored pairs are not "
                                 "its candidates")
            ce_order = tie_rule_order(lg)
            r1 = {d: i for i, d in enumerate(ce_order, start=1)}
            s = blend_scores(cands, r1, k)
            orders["rrf"][q], orders["ce"][q], orders["blend"][q] = cands, ce_order, tie_rule_order(s)
            for d in cands:
                blend_score[(q, d)], r1_of[(q, d)] = s[d], r1[d]
            for i, d in enumerate(orders["blend"][q], start=1):
                blend_rank[(q, d)] = i
        return orders, r1_of, blend_score, blend_rank

    @property
    def orders(self) -> dict[str, dict[str, list[str]]]:
        return self._ranked[0]

    @property
    def r1(self) -> dict[tuple[str, str], int]:
        return self._ranked[1]

    @property
    def blend_score(self) -> dict[tuple[str, str], float]:
        return self._ranked[2]

    @property
    def blend_rank(self) -> dict[tuple[str, str], int]:
        return self._ranked[3]

    @cached_property
    def recomputed(self) -> dict[str, dict]:
        """Every per-query metric of every method, from the orders and the run's qrels."""
        ms = self.settings["metrics"]
        nk, rks, mk = ms["ndcg_k"], ms["recall_ks"], ms["mrr_k"]
        out = {}
        for q in self.run.analysed:
            rels = self.run.qrels[q]
            relevant = {d for d, g in rels.items() if g > 0}
            rec = {"n_relevant": len(relevant),
                   "n_relevant_in_candidates": sum(1 for d in self.run.cands[q] if d in relevant)}
            for m in METHODS:
                o = self.orders[m][q]
                rec[f"{m}_ndcg@{nk}"] = ndcg(o, rels, nk)
                for k in rks:
                    rec[f"{m}_recall@{k}"] = recall(o, rels, k)
                    rec[f"{m}_capped_recall@{k}"] = capped_recall(o, rels, k)
                rec[f"{m}_mrr@{mk}"] = mrr(o, rels, mk)
                rec[f"{m}_first_rel_rank"] = first_rel(o, rels)
            out[q] = rec
        return out

    @cached_property
    def groups(self) -> list[list[str]]:
        return components(self.run.analysed, self.run.qrels)

    @cached_property
    def members(self) -> list[list[int]]:
        pos = {q: i for i, q in enumerate(self.run.analysed)}
        return [[pos[q] for q in g] for g in self.groups]

    @cached_property
    def comparisons(self) -> dict[str, list[str]]:
        return self.settings["comparisons"]["all"]

    @cached_property
    def deltas(self) -> dict[str, list[float]]:
        rc, metric = self.recomputed, self.metric
        return {name: [rc[q][f"{a}_{metric}"] - rc[q][f"{b}_{metric}"] for q in self.run.analysed]
                for name, (a, b) in self.comparisons.items()}

    @cached_property
    def replicates(self) -> dict[str, list[float]]:
        """Every replicate of both schemes for every comparison, from the saved index matrices."""
        out = {}
        for name, d in self.deltas.items():
            gsum = [seq_sum(d[i] for i in m) for m in self.members]
            gsize = [len(m) for m in self.members]
            grouped, query = [], []
            for row in self.run.grouped_idx:
                num, den = 0.0, 0
                for g in row:
                    num += gsum[g]
                    den += gsize[g]
                grouped.append(num / den)
            for row in self.run.query_idx:
                num = 0.0
                for i in row:
                    num += d[i]
                query.append(num / len(row))
            out[f"grouped_{name}"], out[f"query_{name}"] = grouped, query
        return out

    def leave_one_group_out(self, name: str) -> list[float]:
        """The comparison's mean delta without each group in turn (group order)."""
        d = self.deltas[name]
        out = []
        for mem in self.members:
            drop = set(mem)
            out.append(seq_sum(d[i] for i in range(len(d)) if i not in drop) / (len(d) - len(drop)))
        return out

    @cached_property
    def expected_comparisons(self) -> dict[str, dict]:
        lo_p, hi_p = self.settings["percentiles"]
        thr = self.settings["threshold"]
        out = {}
        for name, d in self.deltas.items():
            m = seq_sum(d) / len(d)
            reps = self.replicates
            gi = [percentile(reps[f"grouped_{name}"], lo_p), percentile(reps[f"grouped_{name}"], hi_p)]
            qi = [percentile(reps[f"query_{name}"], lo_p), percentile(reps[f"query_{name}"], hi_p)]
            exp = {"mean": m, "grouped_interval": gi, "query_interval": qi, "wins": sum(x > 0 for x in d),
                   "ties": sum(x == 0 for x in d), "losses": sum(x < 0 for x in d),
                   "grouped_covers_0": gi[0] <= 0 <= gi[1], "grouped_covers_threshold": gi[0] <= thr <= gi[1],
                   "query_covers_0": qi[0] <= 0 <= qi[1], "query_covers_threshold": qi[0] <= thr <= qi[1],
                   "mean_reaches_threshold": m >= thr}
            if len(self.groups) > 1:
                logo = self.leave_one_group_out(name)
                exp["leave_one_group_out.min"], exp["leave_one_group_out.max"] = min(logo), max(logo)
            out[name] = exp
        return out

    @cached_property
    def method_means(self) -> dict[str, float]:
        return {m: mean(self.recomputed[q][f"{m}_{self.metric}"] for q in self.run.analysed) for m in METHODS}
