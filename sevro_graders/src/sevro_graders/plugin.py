"""Registers the built-in graders with sevro (entry point ``output_graders`` in group ``sevro``)."""

from __future__ import annotations

from collections.abc import Callable

from sevro_core.api import Grader, hookimpl
from sevro_graders.changed_paths_grader import ChangedPathsGrader
from sevro_graders.context_text_grader import ContextTextGrader
from sevro_graders.file_text_grader import FileTextGrader
from sevro_graders.git_head_grader import GitHeadGrader
from sevro_graders.json_file_grader import JsonFileGrader
from sevro_graders.json_grader import JsonGrader
from sevro_graders.output_grader import OutputGrader
from sevro_graders.path_grader import PathGrader
from sevro_graders.regex_grader import RegexGrader
from sevro_graders.resource_read_grader import ResourceReadGrader
from sevro_graders.response_text_grader import ResponseTextGrader
from sevro_graders.schema_grader import SchemaGrader
from sevro_graders.shell_grader import ShellGrader
from sevro_graders.skill_activation_grader import SkillActivationGrader
from sevro_graders.tool_call_grader import ToolCallGrader
from sevro_graders.verifier_grader import VerifierGrader


@hookimpl
def sevro_register_graders(register: Callable[[Grader], None]) -> None:
    register(RegexGrader())
    register(JsonGrader())
    register(SchemaGrader())
    register(OutputGrader())
    register(ShellGrader())
    register(GitHeadGrader())
    register(SkillActivationGrader())
    register(PathGrader())
    register(FileTextGrader())
    register(JsonFileGrader())
    register(ToolCallGrader())
    register(ChangedPathsGrader())
    register(ResponseTextGrader())
    register(ResourceReadGrader())
    register(VerifierGrader())
    register(ContextTextGrader())
