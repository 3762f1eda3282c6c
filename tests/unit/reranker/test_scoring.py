"""Cross-encoder scoring: bit-identical to sentence-transformers' CrossEncoder.predict under the
documented batching (per query, token-length-sorted chunks of 16); the same bits at 1, 2 and 4 torch
threads in the enforced numeric mode; tokenise once; the batch plan; shards; the shape audit; the cache
(fresh scoring never reads it and proves each entry equal)."""

import json
import subprocess
import sys

import pytest
from conftest import DATA, FIXTURE, ROOT, read_json

from rerank_study.core.errors import PipelineError
from rerank_study.data import beir
from rerank_study.reranker import models, scoring, scoring_batches, scoring_model

MODEL_PINS = json.loads((ROOT / "lockfiles" / "model_pins.json").read_text())
SETTINGS = scoring.ScoringSettings(max_length=512, truncation="longest_first", batch_size=16, seed=110,
                                   dtype="float32")


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("standin")
    models.build_standin(MODEL_PINS["bi_encoder"], MODEL_PINS["cross_encoder"], folder, 110, 0.02)
    scoring_model.setup_torch(SETTINGS)
    tok, model = scoring_model.load_cross_encoder(folder)
    return folder, tok, model


@pytest.fixture(scope="module")
def pairs():
    corpus = beir.read_corpus(FIXTURE / "corpus.jsonl")
    queries = beir.read_queries(FIXTURE / "queries.jsonl")
    docs = [d.full_text for d in corpus.values()][:37]  # 37 = 16 + 16 + 5: a short last batch
    return [queries["35"]] * len(docs), docs


BIT_IDENTITY_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1] + "/workflow")
from rerank_study.reranker import numerics
numerics.configure_process()  # as the scoring scripts do, before torch
import torch
from rerank_study.data import beir
from rerank_study.reranker import scoring, scoring_model
S = scoring.ScoringSettings(512, "longest_first", 16, 110, "float32")
mode = scoring_model.setup_torch(S, threads=4)
folder, fixture = sys.argv[2], sys.argv[1] + "/tests/data/scifact_fixture"
docs = [d.full_text for d in beir.read_corpus(fixture + "/corpus.jsonl").values()][:37]
q = beir.read_queries(fixture + "/queries.jsonl")["35"]
tok, model = scoring_model.load_cross_encoder(folder)
ranked = {"35": [f"d{i}" for i in range(len(docs))]}
doc_text = dict(zip(ranked["35"], docs))
rows, _ = scoring.score_run(ranked, {"35": q}, doc_text, tok, lambda: model, S, "m", {}, None)
# the pipeline's batches, rebuilt INDEPENDENTLY of the code under test: the truncated joint token length
# from a plain tokenizer call, sorted descending with candidate rank ascending, chunks of 16
lengths = [len(x) for x in
           tok([q] * len(docs), docs, truncation="longest_first", max_length=512)["input_ids"]]
order = sorted(range(len(docs)), key=lambda i: (-lengths[i], i))
batches = [order[i:i + 16] for i in range(0, len(order), 16)]
from sentence_transformers import CrossEncoder
ce = CrossEncoder(folder, device="cpu")
up = {}
for idx in batches:
    for i, x in zip(idx, ce.predict([[q, docs[i]] for i in idx], batch_size=16).tolist()):
        up[i] = x
whole = ce.predict([[q, d] for d in docs], batch_size=16).tolist()
threads = {}
for t in (1, 2, 4):  # the same batches, in this process, at 1, 2 and 4 threads (and the smoke shape: 10 rows)
    torch.set_num_threads(t)
    threads[t] = [repr(x) for idx in batches + [list(range(10))]
                  for x in scoring_model.score_batch(tok, model, [q] * len(idx), [docs[i] for i in idx], S)]
print(json.dumps({"ours": [repr(r["logit"]) for r in rows], "batch": [r["batch"] for r in rows],
                  "upstream": [repr(up[i]) for i in range(len(docs))], "plan": batches,
                  "whole": [repr(x) for x in whole], "threads": threads, "mode": mode["mkl_cnr"],
                  "activation": type(ce.activation_fn).__name__, "max_len": ce.max_seq_length}))
"""


def bit_identity_child(folder):
    out = subprocess.run([sys.executable, "-c", BIT_IDENTITY_CHILD, str(ROOT), str(folder)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def child(loaded):
    return bit_identity_child(loaded[0])


def test_scores_are_bit_identical_to_cross_encoder_predict_per_batch(child):
    """In a fresh process, as the scoring rule runs: the pipeline's logits (score_run) ==
    CrossEncoder.predict(chunk, batch_size=16) on the same chunks, byte for byte; the chunks are the query's
    candidates sorted by truncated token length (desc; rank asc), cut at 16 (37 fixture pairs: 16 + 16 + 5,
    long pairs truncated)."""
    r = child
    # raw logits, as the pinned model is configured
    assert r["activation"] == "Identity" and r["max_len"] == 512
    assert [len(b) for b in r["plan"]] == [16, 16, 5]
    assert r["ours"] == r["upstream"], [(i, a, b) for i, (a, b) in enumerate(zip(r["ours"], r["upstream"]))
                                        if a != b]
    assert r["batch"] == [next(k for k, b in enumerate(r["plan"]) if i in b) for i in range(37)]
    # the reason the batching is documented: predict() over the whole list length-sorts and re-batches,
    # which moves scores in the last bits (seen: up to ~6e-8)
    assert max(abs(float(a) - float(b)) for a, b in zip(r["ours"], r["whole"])) < 1e-5


def test_scores_are_the_same_bits_at_1_2_and_4_threads_in_the_enforced_numeric_mode(child):
    """oneMKL strict CNR (MKL_CBWR=AUTO,STRICT, verified from MKL's own report): the thread count is speed
    only. Covers the run's batch shapes on the fixture: 16, 16, 5 rows, and the smoke shape (10 rows), which
    differs between 2 and 4 threads in MKL's default mode on the reference machine (docs/scoring.md)."""
    r = child
    assert r["mode"] == "AUTO,STRICT"
    assert r["threads"]["1"] == r["threads"]["2"] == r["threads"]["4"]
    assert r["threads"]["4"][:37] == [r["ours"][i] for b in r["plan"] for i in b]  # score_batch == score_run


def test_token_stats_and_truncation_flag(loaded, pairs):
    _, tok, _ = loaded
    qs, ds = pairs
    stats = scoring_batches.token_stats(tok, qs, ds, 512)
    for q, d, s in zip(qs, ds, stats):
        assert s["query_tokens"] == len(tok.tokenize(q)) and s["doc_tokens"] == len(tok.tokenize(d))
        assert s["total_tokens"] == s["query_tokens"] + s["doc_tokens"] + 3  # [CLS] q [SEP] d [SEP]
        assert s["truncated"] == (s["total_tokens"] > 512)
    assert any(s["truncated"] for s in stats), "the fixture must contain a pair longer than 512 tokens"
    enc = tok(qs, ds, truncation="longest_first", max_length=512)
    assert all(len(ids) == min(s["total_tokens"], 512) for ids, s in zip(enc["input_ids"], stats))


def test_shape_audit(loaded, pairs):
    _, tok, model = loaded
    qs, ds = pairs
    shapes = scoring_model.shape_check(tok, model, qs[:2], ds[:2], SETTINGS)
    assert shapes["input_ids"] == [2, 512]
    assert shapes["last_hidden_state"] == [2, 512, 384]
    assert shapes["logits"] == [2, 1]


def test_scoring_twice_is_bitwise_stable(loaded, pairs):
    _, tok, model = loaded
    qs, ds = pairs
    a = scoring_model.score_batch(tok, model, qs[:16], ds[:16], SETTINGS)
    b = scoring_model.score_batch(tok, model, qs[:16], ds[:16], SETTINGS)
    assert a == b


def test_cache_key_changes_with_every_setting():
    base = scoring.batch_cache_key("m", SETTINGS, {"torch": "x"}, ["q"], ["d"])
    changed = [
        scoring.batch_cache_key("m2", SETTINGS, {"torch": "x"}, ["q"], ["d"]),
        scoring.batch_cache_key("m", scoring.ScoringSettings(256, "longest_first", 16, 110, "float32"),
                                {"torch": "x"}, ["q"], ["d"]),
        scoring.batch_cache_key("m", scoring.ScoringSettings(512, "longest_first", 8, 110, "float32"),
                                {"torch": "x"}, ["q"], ["d"]),
        scoring.batch_cache_key("m", scoring.ScoringSettings(512, "longest_first", 16, 111, "float32"),
                                {"torch": "x"}, ["q"], ["d"]),
        scoring.batch_cache_key("m", SETTINGS, {"torch": "y"}, ["q"], ["d"]),
        scoring.batch_cache_key("m", SETTINGS, {"torch": "x"}, ["q"], ["d2"]),
        scoring.batch_cache_key("m", scoring.ScoringSettings(512, "longest_first", 16, 110, "float32",
                                                             "onnx-int8"), {"torch": "x"}, ["q"], ["d"]),
    ]
    assert len({base, *changed}) == 1 + len(changed)
    # the batching rule and the numeric mode are part of every key (other bits under another rule or mode);
    # the thread count and the shard count are not (speed and placement only)
    assert set(SETTINGS.as_dict()) == {"max_length", "truncation", "batch_size", "seed", "dtype", "batching",
                                       "numerics"}
    assert "AUTO,STRICT" in SETTINGS.as_dict()["numerics"] and "token length" in \
        SETTINGS.as_dict()["batching"]
    cfg = {"max_length": 512, "truncation": "longest_first", "batch_size": 16, "seed": 110,
           "dtype": "float32", "shape_check_pairs": 2, "backend": "torch"}
    assert scoring.contract({**cfg, "threads": 4, "shards": 1}) == scoring.contract({**cfg, "threads": 1,
                                                                                     "shards": 7})


# ------------------------------------------------------------------------- the score cache --
def test_cache_entry_round_trips_exact_floats(tmp_path):
    cache = scoring.ScoreCache(tmp_path)
    vals = [0.1, -7.62939453125e-06, 3.4028234663852886e38, -2.5]
    cache.put("ab" + "0" * 62, vals)
    assert cache.get("ab" + "0" * 62, 4) == vals
    assert cache.get("cd" + "0" * 62, 4) is None  # absent: not an error, the batch is inferred


@pytest.mark.parametrize("damage, reason", [
    (lambda e: e["logits"].__setitem__(0, repr(float(e["logits"][0]) + 1e-9)), "checksum"),
    (lambda e: e.update(logits=e["logits"][:-1]), "logits (n=3) for a batch of 3"),
    (lambda e: e.update(key="ff" + "0" * 62), "is not its file name"),
    (lambda e: e.update(logits=["nan", "1.0", "2.0"],
                        sha256=scoring.ScoreCache.checksum(e["key"], ["nan", "1.0", "2.0"])),
     "non-finite"),
    (lambda e: e.pop("sha256"), "not a cache entry of this version"),
])
def test_a_damaged_cache_entry_stops_naming_the_file_and_the_fix(tmp_path, damage, reason):
    cache = scoring.ScoreCache(tmp_path)
    key = "ab" + "1" * 62
    cache.put(key, [1.5, -0.25, 3.0])
    entry = json.loads(cache.path(key).read_text())
    damage(entry)
    cache.path(key).write_text(json.dumps(entry))
    with pytest.raises(scoring.CacheEntryError) as err:
        cache.get(key, 3)
    assert reason in str(err.value) and str(cache.path(key)) in str(err.value) and "Delete" in str(err.value)


def test_score_run_infers_then_reads_the_cache_and_never_loads_weights_for_cached_batches(tmp_path,
                                                                                          loaded, pairs):
    _, tok, model = loaded
    qs, ds = pairs
    ranked = {"35": [f"d{i}" for i in range(len(ds))]}
    doc_text = {f"d{i}": d for i, d in enumerate(ds)}
    loads = []

    def load():
        loads.append(1)
        return model

    cache = scoring.ScoreCache(tmp_path)
    trims = []
    rows, counts = scoring.score_run(ranked, {"35": qs[0]}, doc_text, tok, load, SETTINGS, "m", {"v": 1},
                                     cache, after_query=lambda: trims.append(1))
    assert (counts.pairs_inferred, counts.pairs_from_cache, len(loads), len(trims)) == (37, 0, 1, 1)
    # rows in candidate order; batches: token length desc, rank asc, chunks of 16 (lengths from a plain
    # tokenizer call)
    lengths = [len(x) for x in tok(qs, ds, truncation="longest_first", max_length=512)["input_ids"]]
    order = sorted(range(37), key=lambda i: (-lengths[i], i))
    plan = [order[:16], order[16:32], order[32:]]
    assert [r["r0"] for r in rows] == list(range(1, 38))
    assert [r["batch"] for r in rows] == [next(b for b, idx in enumerate(plan) if i in idx)
                                          for i in range(37)]
    assert counts.tokens_inferred == sum(lengths)
    assert counts.padded_tokens_inferred == sum(len(idx) * max(lengths[i] for i in idx) for idx in plan)
    again, counts2 = scoring.score_run(ranked, {"35": qs[0]}, doc_text, tok, load, SETTINGS, "m", {"v": 1},
                                       cache)
    assert (counts2.pairs_inferred, counts2.pairs_from_cache, len(loads)) == (0, 37, 1)
    assert [r["logit"] for r in again] == [r["logit"] for r in rows]
    direct = {}
    for idx in plan:
        for i, x in zip(idx, scoring_model.score_batch(tok, model, [qs[0]] * len(idx), [ds[i] for i in idx],
                                                       SETTINGS)):
            direct[i] = x
    assert [r["logit"] for r in rows] == [direct[i] for i in range(37)]
    # scoring without a cache (the verifier's path) gives the same rows
    fresh, counts3 = scoring.score_run(ranked, {"35": qs[0]}, doc_text, tok, load, SETTINGS, "m", {"v": 1},
                                       None)
    assert fresh == rows and counts3.pairs_inferred == 37


def test_reinfer_batches_infers_exactly_the_sampled_batches_with_the_runs_bits(loaded, pairs):
    """37 pairs = batches of 16, 16 and 5 (token length desc, rank asc): re-inferring batches 2 and 0 infers
    16 + 5 = 21 pairs, and gives the rows of those two batches exactly as the full scoring does."""
    _, tok, model = loaded
    qs, ds = pairs
    ranked = {"35": [f"d{i}" for i in range(len(ds))]}
    doc_text = {f"d{i}": d for i, d in enumerate(ds)}
    full, _ = scoring.score_run(ranked, {"35": qs[0]}, doc_text, tok, lambda: model, SETTINGS, "m", {"v": 1},
                                None)
    again, counts = scoring.reinfer_batches(ranked, {"35": qs[0]}, doc_text, tok, lambda: model, SETTINGS,
                                            "m", {"v": 1}, [("35", 2), ("35", 0)])
    assert counts.pairs_inferred == 21 and len(again) == 21
    assert again == [r for r in full if r["batch"] in (0, 2)]
    none, counts0 = scoring.reinfer_batches(ranked, {"35": qs[0]}, doc_text, tok, lambda: model, SETTINGS,
                                            "m", {"v": 1}, [("35", 3)])  # no such batch: nothing inferred
    assert none == [] and counts0.pairs_inferred == 0


def test_fresh_scoring_never_reads_the_cache_and_proves_each_entry_equal(tmp_path):
    from rerank_study.data import beir
    from rerank_study.reranker import models, scoring

    pins = read_json(ROOT / "lockfiles/model_pins.json")
    models.build_standin(pins["bi_encoder"], pins["cross_encoder"], tmp_path / "m", 110, 0.02)
    settings = scoring.ScoringSettings(512, "longest_first", 4, 110, "float32")
    scoring_model.setup_torch(settings)
    tok, model = scoring_model.load_cross_encoder(tmp_path / "m")
    corpus = beir.read_corpus(DATA / "scifact_fixture/corpus.jsonl")
    docs = {d: corpus[d].full_text[:300] for d in list(corpus)[:6]}  # 6 pairs = batches of 4 + 2
    ranked = {"35": list(docs)}
    qtext = {"35": beir.read_queries(DATA / "scifact_fixture/queries.jsonl")["35"]}
    cache = scoring.ScoreCache(tmp_path / "cache")

    def score(fresh):
        return scoring.score_run(ranked, qtext, docs, tok, lambda: model, settings, "m", {"v": 1}, cache,
                                 fresh=fresh)

    rows, counts = score(False)
    assert (counts.pairs_inferred, counts.pairs_from_cache, counts.cache_entries_verified) == (6, 0, 0)
    again, fresh = score(True)
    assert (fresh.pairs_inferred, fresh.pairs_from_cache, fresh.cache_entries_verified) == (6, 0, 2)
    assert [r["logit"] for r in again] == [r["logit"] for r in rows]
    # a cache entry with a valid checksum but another score: used silently without fresh, refused with it
    entry_path = next((tmp_path / "cache").rglob("*.json"))
    entry = read_json(entry_path)
    entry["logits"][1] = repr(float(entry["logits"][1]) + 0.5)
    entry["sha256"] = scoring.ScoreCache.checksum(entry["key"], entry["logits"])
    entry_path.write_text(json.dumps(entry))
    cached_rows, c = score(False)
    assert c.pairs_from_cache == 6 and [r["logit"] for r in cached_rows] != [r["logit"] for r in rows]
    with pytest.raises(PipelineError) as err:
        score(True)
    assert "FRESH INFERENCE DIFFERS FROM THE SCORE CACHE: query 35 batch" in str(err.value)
    assert str(entry_path) in str(err.value)


# ------------------------------------------------------------------------- tokenise once --
def test_one_tokenisation_gives_the_joint_tokenizer_call_inputs_and_the_token_counts(loaded, pairs):
    """PairEncoder (each text tokenised once, pairs joined by the tokenizer's own truncation + template) ==
    tokenizer(q, d, truncation="longest_first", max_length=512), ids, type ids and mask; padded batches equal
    tokenizer(..., padding=True); counts equal separate tokenisations (+3 special tokens)."""
    import torch

    _, tok, _ = loaded
    qs, ds = pairs
    before = (tok.backend_tokenizer.truncation, tok.backend_tokenizer.padding)
    feats, stats = scoring_batches.encode_pairs(tok, qs, ds, 512)
    assert (tok.backend_tokenizer.truncation, tok.backend_tokenizer.padding) == before  # private copies only
    ref = tok(qs, ds, truncation="longest_first", max_length=512)
    for k in ("input_ids", "token_type_ids", "attention_mask"):
        assert [f[k] for f in feats] == ref[k], k
    assert [s["total_tokens"] for s in stats] == [len(x) for x in tok(qs, ds, truncation=False)["input_ids"]]
    assert any(s["truncated"] for s in stats)
    batch = [0, 5, 9, 36]
    padded = tok.pad({k: [feats[i][k] for i in batch] for k in ("input_ids", "token_type_ids",
                                                                "attention_mask")},
                     padding=True, return_tensors="pt")
    direct = tok([qs[i] for i in batch], [ds[i] for i in batch], truncation="longest_first", max_length=512,
                 padding=True, return_tensors="pt")
    assert set(padded) == set(direct) and all(torch.equal(padded[k], direct[k]) for k in direct)


# ------------------------------------------------------------------------------- shards --
def test_assign_shards_is_round_robin_over_the_canonical_order():
    assert scoring.assign_shards(list("abcdefg"), 3) == [["a", "d", "g"], ["b", "e"], ["c", "f"]]
    assert scoring.assign_shards(list("abcdefg"), 1) == [list("abcdefg")]
    assert scoring.assign_shards(["a", "b"], 4) == [["a"], ["b"], [], []]
    with pytest.raises(ValueError):
        scoring.assign_shards(["a"], 0)


def _shard_rows(ranked, qids, logit=1.5):
    return [{"qid": q, "doc_id": d, "r0": str(r), "logit": repr(logit)} for q in qids
            for r, d in enumerate(ranked[q], 1)]


def test_gather_shards_concatenates_in_canonical_order_and_refuses_a_foreign_shard():
    ranked = {"q3": ["a", "b"], "q1": ["c"], "q2": ["d", "e", "f"]}
    tables = [("s0.tsv", _shard_rows(ranked, ["q3", "q2"])), ("s1.tsv", _shard_rows(ranked, ["q1"]))]
    rows = scoring.gather_shards(ranked, tables)
    assert [(r["qid"], r["doc_id"], r["r0"]) for r in rows] == [("q3", "a", "1"), ("q3", "b", "2"),
                                                                 ("q1", "c", "1"), ("q2", "d", "1"),
                                                                ("q2", "e", "2"), ("q2", "f", "3")]
    swapped = [("s0.tsv", _shard_rows(ranked, ["q3", "q1"])), ("s1.tsv", _shard_rows(ranked, ["q2"]))]
    with pytest.raises(PipelineError, match=r"SHARD MISMATCH s0\.tsv"):
        scoring.gather_shards(ranked, swapped)
    short = [("s0.tsv", _shard_rows(ranked, ["q3", "q2"])[:-1]), ("s1.tsv", _shard_rows(ranked, ["q1"]))]
    with pytest.raises(PipelineError, match=r"SHARD MISMATCH s0\.tsv: 4 rows for 5 expected pairs"):
        scoring.gather_shards(ranked, short)


def test_useful_gflop_uses_the_pinned_architecture():
    """By hand: 1 layer, h = 2, f = 3, n = 1 is 2 (16 + 12) + 8 = 64 FLOPs; pairs of 1 and 2 tokens: 64 and
    2 * 2 * 28 + 4 * 4 * 2 = 144, so 208 FLOP = 2.08e-07 GFLOP (0.0 to 3 decimals); 10^6 such pairs of 1
    token: 0.064 GFLOP. MiniLM's shape (6, 384, 1536) at 351 tokens: 8.588 GFLOP."""
    tiny = {"num_hidden_layers": 1, "hidden_size": 2, "intermediate_size": 3}
    assert scoring.useful_gflop([1, 2], tiny) == 0.0
    assert scoring.useful_gflop([1] * 10**6, tiny) == 0.064
    minilm = {"num_hidden_layers": 6, "hidden_size": 384, "intermediate_size": 1536}
    assert scoring.useful_gflop([351], minilm) == 8.588
    assert scoring.useful_gflop([351], {**minilm, "num_hidden_layers": 3}) == 4.294


def test_useful_flops_formula_by_hand():
    # one layer, h = 2, f = 3, n = 1: 2*1*(4*4 + 2*2*3) + 4*1*1*2 = 2*28 + 8 = 64
    assert scoring.useful_flops(1, layers=1, hidden=2, intermediate=3) == 64
    # the model (6 x 384, FFN 1536) at 351 tokens: 8.59 GFLOP (an estimate of 43.5 TFLOP for 5000 pairs: ~ 8.7
    # each)
    assert scoring.useful_flops(351) == pytest.approx(8.588e9, rel=1e-3)
