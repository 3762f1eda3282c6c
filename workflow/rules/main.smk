# The workflow of ONE study (the default, or the one named by studies=[name]); a multi-study
# invocation includes this file once per study, as a module (studies.smk).
include: "guards.smk"
include: "common.smk"
include: "data.smk"
include: "candidates.smk"
include: "score.smk"
include: "evaluate.smk"
include: "analyse.smk"
include: "report.smk"
include: "confirm.smk"
include: "retention.smk"

