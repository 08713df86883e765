"""Which language a file is in, whether it is a test, and how each language's tree-sitter grammar names things."""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import PurePosixPath

EXTENSIONS = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java", ".rb": "ruby",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".md": "markdown", ".rst": "rst", ".txt": "text", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml",
    ".json": "json", ".sh": "shell", ".html": "html", ".css": "css", ".sql": "sql",
}

_GRAMMARS = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
}


@dataclass(frozen=True)
class SymbolSpec:
    """Node types that define named things."""

    definitions: frozenset[str]


_JS_DEFS = {
    "function_declaration", "generator_function_declaration", "class_declaration", "method_definition",
    "interface_declaration", "type_alias_declaration", "enum_declaration", "abstract_class_declaration",
    "lexical_declaration", "variable_declaration", "module", "export_statement", "expression_statement",
}
SPECS = {
    "python": SymbolSpec(frozenset({"function_definition", "class_definition", "decorated_definition"})),
    "javascript": SymbolSpec(frozenset(_JS_DEFS)),
    "typescript": SymbolSpec(frozenset(_JS_DEFS)),
    "go": SymbolSpec(frozenset({"function_declaration", "method_declaration", "type_declaration"})),
    "rust": SymbolSpec(frozenset({"function_item", "struct_item", "enum_item", "impl_item", "trait_item", "mod_item",
                                  "macro_definition", "const_item", "static_item", "type_item"})),
    "java": SymbolSpec(frozenset({"class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
                                  "method_declaration", "constructor_declaration"})),
    "ruby": SymbolSpec(frozenset({"method", "singleton_method", "class", "module"})),
    "c": SymbolSpec(frozenset({"function_definition", "struct_specifier", "enum_specifier", "type_definition", "union_specifier"})),
    "cpp": SymbolSpec(frozenset({"function_definition", "class_specifier", "struct_specifier", "enum_specifier",
                                 "namespace_definition", "template_declaration", "type_definition"})),
}
SPECS["tsx"] = SPECS["typescript"]

_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs|testing|testdata)/|(^|/)test_[^/]*\.py$|_test\.(py|go|rs|rb|c|cc|cpp)$|"
    r"\.(test|spec)\.[jt]sx?$|(^|/)conftest\.py$|Tests?\.java$|_spec\.rb$"
)


def language_of(path: str) -> str:
    name = PurePosixPath(path).name
    suffix = PurePosixPath(path).suffix.lower()
    if name in {"Makefile", "Dockerfile"}:
        return name.lower()
    return EXTENSIONS.get(suffix, "text")


def is_test_path(path: str) -> bool:
    return bool(_TEST_PATH.search(path))


def has_grammar(language: str) -> bool:
    return language in _GRAMMARS


@cache
def parser_for(language: str):
    """A tree-sitter parser from the language's grammar wheel, or None when the wheel is missing."""
    import tree_sitter

    module_name, attr = _GRAMMARS[language]
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return tree_sitter.Parser(tree_sitter.Language(getattr(module, attr)()))
