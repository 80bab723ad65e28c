"""The grammar rules of the file, its declarations and types."""

from __future__ import annotations

from typing import Any

from lark import Token, v_args

from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl import types as ty
from wflang.dsl.build.base import BuilderBase, Fields
from wflang.dsl.span import Span


class DeclarationRules(BuilderBase):
    """The grammar rules of the file, its declarations and types."""

    def start(self, children: list[Any]) -> sp.WorkflowSpec:
        header, *items = children
        file = self.ctx.file
        spans = [x.span for x in children if x is not None]
        whole = spans[0].to(spans[-1]) if spans else Span(file, 1, 1, 1, 1)
        return sp.WorkflowSpec(file, header, tuple(items), span=whole)

    @v_args(inline=True)
    def header(self, kw: Token, name: Token, version: Token) -> sp.Header:
        return sp.Header(
            self._ident(name), self._int(version), span=self._tspan(kw).to(self._tspan(version))
        )

    @v_args(inline=True)
    def import_decl(self, kw: Token, path: Token, alias: Token | None) -> sp.ImportDecl:
        end = alias if alias is not None else path
        return sp.ImportDecl(
            self._string(path).value,
            None if alias is None else self._ident(alias),
            span=self._tspan(kw).to(self._tspan(end)),
        )

    @v_args(inline=True)
    def type_decl(self, kw: Token, name: Token, block: Fields) -> sp.TypeDecl:
        return sp.TypeDecl(self._ident(name), block.fields, span=self._tspan(kw).to(block.span))

    def enum_decl(self, children: list[Any]) -> sp.EnumDecl:
        kw, name, *members, close = children
        return sp.EnumDecl(
            self._ident(name), tuple(members), span=self._tspan(kw).to(self._tspan(close))
        )

    @v_args(inline=True)
    def enum_member(self, name: Token) -> sp.Ident:
        return self._ident(name)

    @v_args(inline=True)
    def input_decl(self, kw: Token, block: Fields) -> sp.InputDecl:
        return sp.InputDecl(block.fields, span=self._tspan(kw).to(block.span))

    @v_args(inline=True)
    def context_decl(self, kw: Token, block: Fields) -> sp.ContextDecl:
        return sp.ContextDecl(block.fields, span=self._tspan(kw).to(block.span))

    @v_args(inline=True)
    def output_decl(self, kw: Token, block: Fields) -> sp.OutputDecl:
        return sp.OutputDecl(block.fields, span=self._tspan(kw).to(block.span))

    @v_args(inline=True)
    def signal_decl(self, kw: Token, name: Token, block: Fields | None) -> sp.SignalDecl:
        end = block.span if block else self._tspan(name)
        payload = block.fields if block else None
        return sp.SignalDecl(self._ident(name), payload, span=self._tspan(kw).to(end))

    @v_args(inline=True)
    def message_decl(self, kw: Token, name: Token, block: Fields | None) -> sp.MessageDecl:
        end = block.span if block else self._tspan(name)
        payload = block.fields if block else None
        return sp.MessageDecl(self._ident(name), payload, span=self._tspan(kw).to(end))

    def error_decl(self, children: list[Any]) -> sp.ErrorDecl:
        kw, *names = children
        return sp.ErrorDecl(tuple(names), span=self._tspan(kw).to(names[-1].span))

    @v_args(inline=True)
    def error_payload_decl(self, kw: Token, name: sp.Ident, block: Fields) -> sp.ErrorDecl:
        payloads = ((name.text, block.fields),)
        return sp.ErrorDecl((name,), payloads, span=self._tspan(kw).to(block.span))

    @v_args(inline=True)
    def error_name(self, name: Token) -> sp.Ident:
        return self._ident(name)

    def service_decl(self, children: list[Any]) -> sp.ServiceDecl:
        kw, name, *rest = children
        params = tuple(c for c in rest if isinstance(c, sp.Field))
        result: tuple[sp.Field, ...] | ty.NamedType | None = None
        raises: tuple[sp.Ident, ...] = ()
        read_only = False
        end = self._tspan(kw)
        for c in rest:
            if isinstance(c, Token):
                end = self._tspan(c)
                read_only = read_only or c.type == "READS"
            elif isinstance(c, Fields):
                result, end = c.fields, c.span
            elif isinstance(c, ty.NamedType):
                result, end = c, c.span
            elif isinstance(c, tuple):
                raises, end = c, c[-1].span
        return sp.ServiceDecl(name, params, result, raises, read_only, span=self._tspan(kw).to(end))

    def raises(self, children: list[Token]) -> tuple[sp.Ident, ...]:
        return tuple(self._ident(t) for t in children)

    @v_args(inline=True)
    def start_decl(self, kw: Token, target: Token) -> sp.StartDecl:
        return sp.StartDecl(self._ident(target), span=self._tspan(kw).to(self._tspan(target)))

    def field_block(self, children: list[Any]) -> Fields:
        open_, *fields, close = children
        return Fields(
            tuple(f for f in fields if f is not None),
            self._tspan(open_).to(self._tspan(close)),
        )

    @v_args(inline=True)
    def field(self, name: Token, type_: ty.TypeSpec, default: ex.Expr | None) -> sp.Field:
        end = default.span if default is not None else type_.span
        return sp.Field(self._ident(name), type_, default, span=self._tspan(name).to(end))

    def dotted_name(self, children: list[Token]) -> sp.Ident:
        first, last = self._tspan(children[0]), self._tspan(children[-1])
        return sp.Ident(".".join(children), span=first.to(last))

    # -- types ---------------------------------------------------------------

    @v_args(inline=True)
    def named_type(self, name: Token) -> ty.NamedType:
        return ty.NamedType(str(name), span=self._tspan(name))

    @v_args(inline=True)
    def qualified_type(self, alias: Token, name: Token) -> ty.NamedType:
        return ty.NamedType(f"{alias}.{name}", span=self._tspan(alias).to(self._tspan(name)))

    def generic_type(self, children: list[Any]) -> ty.GenericType:
        name, *args, close = children
        span = self._tspan(name).to(self._tspan(close))
        return self._nest(ty.GenericType(str(name), tuple(args), span=span), *args)

    @v_args(inline=True)
    def optional_type(self, inner: ty.NamedType | ty.GenericType) -> ty.OptionalType:
        # The '?' token is anonymous; it ends one column after the inner type.
        s = inner.span
        return ty.OptionalType(
            inner, span=Span(s.file, s.line, s.column, s.end_line, s.end_column + 1)
        )
