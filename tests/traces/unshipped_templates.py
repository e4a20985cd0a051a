"""Small, realistic chat templates the project does NOT ship (issue 21), written after the
public GLM-4.6, gpt-oss and Kimi-K3 templates' reasoning rules, to pin offline classes."""

from __future__ import annotations

_LAST_USER = (
    "{%- set ns = namespace(last_user=-1) -%}"
    "{%- for message in messages -%}{%- if message.role == 'user' -%}"
    "{%- set ns.last_user = loop.index0 -%}{%- endif -%}{%- endfor -%}"
)
_CALLS = (
    "{%- for tc in message.tool_calls or [] -%}<tool_call>{{ tc.function.name }} "
    "{{ tc.function.arguments | tojson }}</tool_call>{%- endfor -%}"
)

# GLM-4.6: reasoning after the last user turn is kept; `clear_thinking=false` keeps all of it.
GLM_LIKE = (
    _LAST_USER + "{%- for message in messages -%}"
    "{%- if message.role == 'user' -%}<|user|>{{ message.content }}"
    "{%- elif message.role == 'assistant' -%}<|assistant|>"
    "{%- if ((clear_thinking is defined and not clear_thinking) or loop.index0 > ns.last_user)"
    " and message.reasoning_content -%}<think>{{ message.reasoning_content }}</think>{%- endif -%}"
    "{{ message.content or '' }}" + _CALLS + "{%- elif message.role == 'tool' -%}"
    "<|observation|>{{ message.content }}{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"
)

# gpt-oss: the analysis channel is the message's `thinking` field, kept after the last user turn.
GPT_OSS_LIKE = (
    _LAST_USER + "<|start|>system<|message|>Reasoning: "
    "{{ reasoning_effort if reasoning_effort is defined else 'medium' }}"
    "{%- if reasoning_effort == 'high' -%} Think step by step.{%- endif -%}<|end|>"
    "{%- for message in messages -%}"
    "{%- if message.role == 'assistant' -%}"
    "{%- if message.thinking and loop.index0 > ns.last_user -%}"
    "<|start|>assistant<|channel|>analysis<|message|>{{ message.thinking }}<|end|>{%- endif -%}"
    "<|start|>assistant<|channel|>final<|message|>{{ message.content or '' }}" + _CALLS + "<|end|>"
    "{%- else -%}<|start|>{{ message.role }}<|message|>{{ message.content }}<|end|>"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}"
)

# Kimi-K3: a `thinking` kwarg; reasoning on tool-call turns after the last plain reply is kept
# (the Kimi-K2 rule), and `thinking=false` drops every trace.
KIMI_K3_LIKE = (
    "{%- set ns = namespace(last_plain=-1) -%}"
    "{%- for message in messages -%}"
    "{%- if message.role == 'assistant' and not message.tool_calls -%}"
    "{%- set ns.last_plain = loop.index0 -%}{%- endif -%}{%- endfor -%}"
    "{%- for message in messages -%}<|im_{{ message.role }}|>"
    "{%- if message.role == 'assistant' -%}"
    "{%- if not (thinking is defined and not thinking) and message.tool_calls"
    " and loop.index0 > ns.last_plain and message.reasoning_content -%}"
    "<think>{{ message.reasoning_content }}</think>{%- else -%}<think></think>{%- endif -%}"
    "{%- endif -%}{{ message.content or '' }}" + _CALLS + "<|im_end|>{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_assistant|>{%- endif -%}"
)
