# Every parse-time check of one study's invocation, each one library call, before any job (a refusal leaves
# nothing behind and names the file, the expected and found value, and the fix): the switches, the sealed
# confirmation's guard (an opening), the study's inputs, the committed pins, and the seal on the development side.
from rerank_study.settings import guards as _guards
from rerank_study.settings import studies as _studies
from rerank_study.settings.config import repin_set
from rerank_study.core.errors import PipelineError
from rerank_study.seal import guard as _seal_guard


def _checked(call, *args, **kwargs):
    try:
        return call(*args, **kwargs)
    except PipelineError as exc:
        raise WorkflowError(str(exc)) from None


LOCK = config["lockdir"]
REPIN = repin_set(config)  # explicit re-pinning only (freeze_* targets); empty for every analysis run
CONFIRM = bool(config["unseal"])
_checked(_guards.check_invocation, config, REPIN, CONFIRM)
# a derived backend is set by a committed config file (which the audit reads as its anchor), never by --config
_checked(_guards.check_backend_source, workflow.config_settings.config)  # the --config values alone
# an opening: the repository's own lock folder (or a labelled test fixture), no repin, frozen settings, pins and
# method, the method's files committed, the lock's library versions, no look the ledgers do not know
UNSEAL = _checked(_seal_guard.check_unseal, config, LOCK, workflow.basedir) if CONFIRM else None
# the study: its dataset and both qrels files pinned, its reranker pinned with one logit or a declared index, its
# candidates present
_checked(_studies.check_study, config, LOCK, REPIN, catalogue_path=Path(workflow.basedir) / config["data"]["catalogue"],
         default_model_pins=Path(workflow.basedir) / "lockfiles" / "model_pins.json")
_checked(_guards.check_committed_inputs, LOCK, REPIN)
_checked(_guards.check_backend_model, config, LOCK, REPIN)  # a derived backend: a model its export supports
# the seal: no development input (qrels, split, candidates, a user's run) holds a judgement, a query id or a query
# text of a sealed set of any lock folder of the repository or this one (the rule splits repeats it on the
# verified data; repin=data and repin=splits check what they would write)
if "data" not in REPIN:
    _checked(_seal_guard.check_development, config, LOCK, workflow.basedir, *_checked(_guards.development_inputs, config),
             action=f"run study {config['study']['name']!r}", own_pending="splits" in REPIN)
