"""JS/TS definitions the parse stage reads (jsmonorepo defects 1, 2, 3, 5): interface `extends` and generic base
classes as bases, definitions written as values (assignments, object pairs, class fields, `forwardRef`/`memo`),
and TypeScript variance annotations, which are no syntax errors (stage only, no Prefect)."""

from __future__ import annotations

from assay.stages.core.artifacts import Entity
from assay.stages.index.parse import parse_source


def _defs(source: str, path: str, language: str) -> dict[str, Entity]:
    """qualname -> first part of each definition (files and windows left out)."""
    ents = parse_source(source.encode(), path, language, "h").entities
    return {e.qualname: e for e in ents if e.kind not in ("file", "window") and e.part == 0}


def test_interface_extends_are_bases() -> None:
    src = (
        "export interface Money { cents: number }\n"
        "export interface PaymentGateway extends EventTarget {\n  refund(id: string): Promise<void>;\n}\n"
        "export interface ZodType<O = unknown> extends core.$ZodType<O, O>, Iterable<O> { x: O }\n"
    )
    defs = _defs(src, "src/types.ts", "typescript")
    assert defs["PaymentGateway"].bases == ["EventTarget"]
    assert defs["ZodType"].bases == ["core.$ZodType", "Iterable"]  # `$` kept, type arguments no bases
    assert defs["Money"].bases == []


def test_type_arguments_are_no_bases() -> None:
    src = (
        'import React from "react";\n'
        "export class LegacyModal extends React.Component<{ open: boolean }> {\n"
        "  render() { return this.props.open ? <div /> : null; }\n}\n"
        "class Store extends Base<Config> implements Foo<Bar>, Baz {}\n"
    )
    defs = _defs(src, "src/Modal.tsx", "tsx")
    assert defs["LegacyModal"].bases == ["React.Component"]
    assert defs["Store"].bases == ["Base", "Foo", "Baz"]


def test_js_class_heritage_member_expression() -> None:
    defs = _defs("class A extends React.Component {}\nclass B extends mixin(C, D) {}\n", "a.js", "javascript")
    assert defs["A"].bases == ["React.Component"]
    assert defs["B"].bases == ["mixin", "C", "D"]


def test_commonjs_and_prototype_assignments_are_definitions() -> None:
    src = (
        "function Store(initial) { this.state = initial; this.reset = function () { this.state = null; }; }\n"
        "/** Dispatch an action. */\n"
        "Store.prototype.dispatch = function dispatch(action) {\n  return action;\n};\n"
        "exports.createStore = function createStore(initial) { return new Store(initial); };\n"
        "module.exports.applyMiddleware = (...mws) => (store) => store;\n"
        "res.send = function send(body) {\n  if (!body) throw new TypeError('body');\n  return this;\n};\n"
        "handlers[key] = function () {};\n"
    )
    defs = _defs(src, "src/store.js", "javascript")
    dispatch = defs["Store.dispatch"]
    assert (dispatch.kind, dispatch.name, dispatch.parent) == ("method", "dispatch", "Store")
    assert (dispatch.start_line, dispatch.end_line) == (3, 5)
    assert dispatch.docstring == "Dispatch an action."
    assert dispatch.params == ["action"]
    assert defs["Store.reset"].kind == "method"  # `this.reset = ...` in a constructor function
    assert defs["createStore"].kind == "function" and defs["createStore"].parent is None
    assert defs["applyMiddleware"].params == ["mws"]
    send = defs["res.send"]
    assert (send.kind, send.name, send.parent, send.start_line, send.end_line) == ("function", "send", "res", 8, 11)
    assert send.facts is not None and send.facts.raises == ["TypeError"]  # read from the function's body
    assert not any("key" in q for q in defs)


def test_object_functions_are_definitions_but_call_options_and_callback_state_are_not() -> None:
    src = (
        "const handlers = { onReset: (e) => {}, label: 'x' };\n"
        "Store.prototype = { undo: function () {} };\n"
        "const codec = z.codec(a, b, { decode: (s) => Number(s) });\n"
        "register('x', (inst) => { inst.parse = (p) => p; });\n"
        "function make() { const inst = {}; inst.check = () => 1; return inst; }\n"
        "(function () { Lib.helper = function helper() {}; })();\n"
    )
    defs = _defs(src, "src/h.js", "javascript")
    assert defs["handlers.onReset"].name == "onReset"
    assert defs["Store.undo"].kind == "method"
    assert defs["Lib.helper"].kind == "function"  # an IIFE's body is the module's top level
    assert not any(q.endswith(("decode", "parse", "check")) for q in defs), sorted(defs)


def test_shorthand_methods_are_named_as_their_pair_twins_and_this_members_under_the_class() -> None:
    """`{ onReset() {...} }` is `handlers.onReset` as `{ onReset: function }` is (it was a bare `onReset` method
    with no owner), nested objects name their key (Vue's `methods: {...}`), a call's options stay no definition,
    and `this.render = ...` in a constructor is the class's member, not `Widget.constructor.render`."""
    src = (
        "const handlers = {\n  onReset(event) { return event; },\n  async load() {},\n  methods: { go() {} },\n};\n"
        "Store.prototype = { dispatch(action) { return action; } };\n"
        "foo({ decode(s) { return s; } });\n"
        "class Widget {\n  constructor(o) {\n    this.render = () => o;\n  }\n  draw() {}\n}\n"
        "function Legacy() { this.get = function (k) { return k; }; }\n"
    )
    defs = _defs(src, "src/h.js", "javascript")
    assert defs["handlers.onReset"].kind == "function" and defs["handlers.onReset"].parent == "handlers"
    assert defs["handlers.onReset"].start_line == 2 and "handlers.load" in defs
    assert "handlers.methods.go" in defs
    assert defs["Store.dispatch"].kind == "method"
    assert defs["Widget.render"].parent == "Widget" and "Widget.constructor.render" not in defs
    assert "Legacy.get" in defs  # a constructor function keeps its `this` members under itself
    assert not any(q.endswith("decode") for q in defs), sorted(defs)


def test_class_field_arrows_and_wrapped_components() -> None:
    src = (
        'import React, { forwardRef, memo } from "react";\n'
        "export const TextInput = forwardRef<HTMLInputElement, { label: string }>((props, ref) => {\n"
        "  return <input ref={ref} aria-label={props.label} />;\n});\n"
        "export const MemoAvatar = React.memo(function Avatar({ url }: { url: string }) {\n"
        "  return <img src={url} />;\n});\n"
        "export class Repo {\n"
        '  @HostListener("x") handleEvent = async (evt: { type: string }) => { console.log(evt.type); };\n'
        "  count = 0;\n}\n"
        "export const NotAComponent = useThing(() => 1);\n"
    )
    defs = _defs(src, "src/ui.tsx", "tsx")
    text_input = defs["TextInput"]
    assert (text_input.kind, text_input.start_line, text_input.end_line) == ("function", 2, 4)
    assert text_input.params == ["props", "ref"]
    assert defs["MemoAvatar"].kind == "function"
    handle = defs["Repo.handleEvent"]
    assert (handle.kind, handle.start_line) == ("method", 9)
    assert handle.facts is not None and handle.facts.is_async and handle.facts.decorators == ["HostListener"]
    assert "Repo.count" not in defs and "NotAComponent" not in defs


def test_variance_annotations_are_no_syntax_errors() -> None:
    src = (
        "export interface Producer<out T> {\n  produce(): T;\n}\n"
        "export interface Obj<\n  /** @ts-ignore Cast variance */\n"
        "  out Shape extends object = {},\n  in out C = never,\n> {}\n"
        "export type Fn<in T> = (x: T) => void;\n"
        "// a comment with <out x in it\n"
        "export function ok(): number { return 1; }\n"
    )
    parsed = parse_source(src.encode(), "src/v.ts", "typescript", "h")
    assert not parsed.partial and parsed.error == ""
    defs = {e.qualname: e for e in parsed.entities if e.kind not in ("file", "window")}
    assert defs["Producer"].signature == "interface Producer<out T>"
    assert defs["Fn"].signature.startswith("type Fn<in T> =")  # the file's own text, not the blanked parse's
    assert (defs["ok"].start_line, defs["ok"].docstring) == (11, "a comment with <out x in it")


def test_real_syntax_errors_beside_variance_are_still_reported() -> None:
    src = "export interface Producer<out T> {\n  produce(): T;\n}\nexport function bad( { return 1; }\n"
    parsed = parse_source(src.encode(), "src/bad.ts", "typescript", "h")
    assert parsed.partial and "syntax errors near line 4" in parsed.error
