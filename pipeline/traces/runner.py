"""The reasoning-trace study's unit runner: a `visibility` unit or one compression arm's unit."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pipeline.chat.errors import EndpointError
from pipeline.chat.messages import ChatClient, counter_of
from pipeline.config.schema import EndpointConfig
from pipeline.study import UnitContext, UnitOutcome, UnitResult, UnitSpec
from pipeline.study_validity import endpoint_failure
from pipeline.traces.compression.arms import Arm
from pipeline.traces.compression.items import TraceItem
from pipeline.traces.config import TracesConfig
from pipeline.traces.recital import EndpointTemplate, recital_shapes, run_visibility
from pipeline.traces.records import ROW_COLUMNS
from pipeline.traces.summarise import NOT_LOCAL, run_compression, stagger_start
from pipeline.traces.visibility.sandbox import RenderSandbox

VISIBILITY = "visibility"
TemplateLoader = Callable[[EndpointConfig], EndpointTemplate | None]


def empty_row() -> dict[str, object]:
    return {c.name: None for c in ROW_COLUMNS}


class TracesRunner:
    step_purpose = "summary"
    steps_per_unit = None
    requests_per_unit = None

    def __init__(
        self,
        config: TracesConfig,
        arms: Mapping[str, Arm],
        items: Sequence[TraceItem],
        endpoint: EndpointConfig,
        template_loader: TemplateLoader,
    ) -> None:
        self.config = config
        self.arms = dict(arms)
        # the arms whose prompts go on the wire; a hybrid sends its wrapped arm's, in its order
        self.prompt_arms = sorted(
            {arm.prompts.name for arm in self.arms.values() if arm.needs_model}
        )
        self.items = tuple(items)
        self.endpoint = endpoint
        self.template_loader = template_loader
        self._template: tuple[EndpointTemplate | None] | None = None

    def template(self) -> EndpointTemplate | None:
        """The endpoint's template, read once per worker (the glue's loader does the I/O)."""
        if self._template is None:
            self._template = (self.template_loader(self.endpoint),)
        return self._template[0]

    async def run(self, spec: UnitSpec, client: ChatClient, context: UnitContext) -> UnitResult:
        try:
            if spec.arm == VISIBILITY:
                return await self._visibility(client, context)
            return await self._compression(spec.arm, client)
        except EndpointError as exc:  # outside the recorded steps: the shared vocabulary names it
            failure = endpoint_failure(exc)
            outcome = UnitOutcome(
                False, failure.invalid_reason, failure.retryable, error_detail=failure.detail
            )
        return UnitResult(outcome, empty_row())

    async def _visibility(self, client: ChatClient, context: UnitContext) -> UnitResult:
        recital = self.config.recital
        template = self.template()
        shapes = recital_shapes(recital.dialects, recital.content_forms, recital.args_forms)
        with RenderSandbox() as sandbox:  # a user's template is code: bounded renders
            out = await run_visibility(
                client,
                template,
                shapes,
                max_tokens=recital.max_tokens,
                seed=context.seed,
                renderer=sandbox,
            )
        row = {
            **empty_row(),
            "part": "visibility",
            "items": len(shapes),
            "model_requests": out.requests,
            "template_name": template.name if template else None,
            "template_sha256": out.probes[0]["template_sha256"] if out.probes else None,
            "live_renders": out.live_renders,
            "renders_identical": out.renders_identical,
            "recited": sum(bool(r["recited"]) for r in out.recitals),
            "secrets_sent": len(out.recitals),
        }
        tables = {"template_probes": out.probes, "recitals": out.recitals}
        return UnitResult(UnitOutcome(valid=True), row, tables)

    async def _compression(self, arm_name: str, client: ChatClient) -> UnitResult:
        compression = self.config.compression
        local = self.endpoint.local is not None
        counter = counter_of(client) if local else None
        arm = self.arms[arm_name]
        out = await run_compression(
            client,
            arm,
            self.items,
            repeat_check=compression.repeat_check,
            thinking_in_request=compression.thinking_off == "chat_template_kwargs",
            counter=counter,
            no_counter_reason=NOT_LOCAL if not local else "the client cannot count tokens",
            start=stagger_start(arm.prompts.name, self.prompt_arms, len(self.items)),
        )
        row = {
            **empty_row(),
            "part": "compression",
            "items": len(out.records),
            "model_requests": out.requests,
            "greedy_ok": out.greedy_ok,
            "repeat_identical": out.repeat_identical,
        }
        return UnitResult(UnitOutcome(valid=True), row, {"compressions": out.records})
