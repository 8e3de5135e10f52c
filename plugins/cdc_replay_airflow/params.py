"""The `cdc_replay` trigger form, derived from the job contract: one field per form key of
`cdc_jobs.contract` (the option's name with underscores), typed, titled, explained and placed in a section
from the option's metadata, plus the three fields that are not job options (pipeline, out_dir, merge)."""

from __future__ import annotations

from typing import Any, Mapping

from cdc_jobs.contract import JOBS, Option

# An optional field must accept null: the trigger form sends an empty text box or a cleared list as null and
# marks a field whose type excludes null as required (its section shows an error, the Trigger button stays
# disabled). Lists offer None as their "nothing chosen" entry for the same reason.
OPTIONAL_STRING = ["null", "string"]
SECTIONS = ("Source", "Window", "Tables", "Target", "Merge", "Verify")


def _options() -> dict[str, Option]:
    """form key -> the Option that describes it (the first job declaring a title, for shared keys)."""
    found: dict[str, Option] = {}
    for cls in JOBS.values():
        for _, o, _ in cls.options():
            if o.form and (o.form not in found or (o.title and not found[o.form].title)):
                found[o.form] = o
    return found


def _schema(key: str, o: Option, default: Any) -> tuple[Any, dict[str, Any]]:
    kind = o.form_kind or o.kind
    if kind == "list":
        items: dict[str, Any] = {"type": "string"}
        if o.pattern:
            items["pattern"] = f"^{o.pattern}$"
        return [], {"type": "array", "items": items}
    if kind == "bool":
        # Three states, so that "not set" leaves the pipeline's choice alone (a plain switch always sends a value).
        default_text = "on" if key == "html" else ("on" if default else "off")
        return None, {"type": ["null", "boolean"], "enum": [None, True, False],
                      "values_display": {None: f"(the pipeline's, else {default_text})", True: "on", False: "off"}}
    if kind == "int":
        return None, {"type": ["null", "integer"], "minimum": 1}
    if kind == "choice":
        return None, {"type": OPTIONAL_STRING, "enum": [None, *o.choices],
                      "values_display": {None: f"(default: {default})", **{c: c for c in o.choices}}}
    schema: dict[str, Any] = {"type": OPTIONAL_STRING}
    if o.pattern:
        schema["pattern"] = f"^(|{o.pattern})$"
    return None, schema


def _sentence(text: str) -> str:
    text = text[:1].upper() + text[1:]
    return text if text.endswith(".") else text + "."


def build_params(*, formats: list[str], pipelines: list[str], pipeline_labels: Mapping[str, str],
                 pipelines_note: str) -> dict[str, Any]:
    from airflow.sdk import Param

    defaults = {name: d for cls in JOBS.values() for name, _, d in cls.options()}
    labels = {name: name for name in formats}
    extra: dict[str, dict[str, Any]] = {
        "format": {"enum": [None, *formats], "values_display": {None: "(the pipeline's format)", **labels}},
        "to_format": {"enum": [None, *formats], "values_display": {None: "(no re-encode / the pipeline's)", **labels}},
        "since": {"format": "date-time"},
        "until": {"format": "date-time"},
    }
    notes = {
        "source": " Instead of a pipeline: an absolute archive path, directory or glob, or an object-store "
                  "location (s3a://bucket/...), under the configured data roots, or kafka://HOST:PORT/TOPIC[,TOPIC].",
        "kafka_config": " Here: an Airflow connection id (its extra holds the settings, login/password become "
                        "SASL credentials) or an absolute settings file path.",
        "reference_conn_id": " Here: the Airflow connection id of the source database (overrides the "
                             "pipeline's); its URL reaches the job through the environment.",
        "html": " Off: only the JSON report (the report page then renders it).",
        "base": " An absolute path under the configured data roots.",
        "checkpoint": " An absolute path under the configured data roots.",
    }
    params: dict[str, Any] = {
        "pipeline": Param(
            None, type=OPTIONAL_STRING, enum=[None, *pipelines],
            values_display={None: "(none: ad-hoc source below)", **pipeline_labels},
            title="Pipeline", section="Source",
            description="A configured pipeline supplies every option it sets; non-empty fields below override "
                        "it. " + pipelines_note),
    }
    for key, o in _options().items():
        name = next(n for cls in JOBS.values() for n, oo, _ in cls.options() if oo is o)
        default, schema = _schema(key, o, defaults[name])
        schema |= extra.get(key, {})
        params[key] = Param(default, title=o.title or key, section=o.section or "Source",
                            description=_sentence(o.help.replace("%%", "%")) + notes.get(key, ""), **schema)
    params["out_dir"] = Param(
        None, type=OPTIONAL_STRING, title="Output directory", section="Target",
        description="Absolute directory (under the configured data roots) for replay/ and state/. Empty: "
                    "<pipeline state root>/manual/<run id>, or $CDC_REPLAY_OUTPUT_ROOT/<run id> for an ad-hoc source.")
    params["merge"] = Param(True, type="boolean", title="Merge into table state", section="Merge",
                            description="Off: replay only (merge and verify are skipped).")
    order = {s: i for i, s in enumerate(SECTIONS)}
    return dict(sorted(params.items(), key=lambda kv: order.get(kv[1].schema.get("section"), 99)))
