// Tests of the Jinja engine. The expected outputs of the literal cases were
// produced by jinja2 3.1.6 configured as transformers' apply_chat_template
// configures it (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
// loopcontrols, transformers' tojson/raise_exception/strftime_now, with
// strftime_now's clock fixed at 2024-07-05 14:03:09.123456), and pasted in.
#include "models/chat/jinja.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/chat/jinja_value.h"
#include "nlohmann/json.hpp"

namespace kiln::models::jinja {
namespace {

using ::testing::HasSubstr;

RenderOptions FixedClock() {
  RenderOptions options;
  options.time_zone = absl::UTCTimeZone();
  options.now = [] {
    return absl::FromCivil(absl::CivilSecond(2024, 7, 5, 14, 3, 9), absl::UTCTimeZone()) +
           absl::Microseconds(123456);
  };
  return options;
}

absl::StatusOr<std::string> TryRender(absl::string_view source, absl::string_view context_json,
                                      const RenderOptions& options) {
  absl::StatusOr<Template> t = Template::Parse(source);
  if (!t.ok()) return t.status();
  const auto json = nlohmann::ordered_json::parse(std::string(context_json), nullptr, false);
  if (json.is_discarded()) return absl::InternalError("bad test context JSON");
  absl::StatusOr<Value> context = FromJson(json);
  if (!context.ok()) return context.status();
  return t->Render(*context, options);
}

// The output, or "ERROR: <status>" so that a failing case shows why.
std::string Render(absl::string_view source, absl::string_view context_json = "{}") {
  absl::StatusOr<std::string> out = TryRender(source, context_json, FixedClock());
  return out.ok() ? *out : absl::StrCat("ERROR: ", out.status().ToString());
}

absl::Status RenderError(absl::string_view source, absl::string_view context_json = "{}",
                         const RenderOptions& options = FixedClock()) {
  absl::StatusOr<std::string> out = TryRender(source, context_json, options);
  if (out.ok()) return absl::InternalError(absl::StrCat("rendered without error: ", *out));
  return out.status();
}

TEST(JinjaSyntax, TextAndLiterals) {
  EXPECT_EQ(Render(R"j(hello)j"),
            R"j(hello)j");
  EXPECT_EQ(Render(R"j({{ 'a' 'b' "c" }})j"),
            R"j(abc)j");
  EXPECT_EQ(Render(R"j({{ '\x41\u00e9\U0001F600\101\q\\' }})j"),
            R"j(Aé😀A\q\)j");
  EXPECT_EQ(Render(R"j({{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1.5e3 }} {{ 1E-2 }})j"),
            R"j(1000 31 15 5 1500.0 0.01)j");
  EXPECT_EQ(Render(R"j({{ true }} {{ True }} {{ false }} {{ none }} {{ None }})j"),
            R"j(True True False None None)j");
  EXPECT_EQ(Render(R"j({{ [1, 'a', [2]] }} {{ (1,) }} {{ () }} {{ (1, 2) }} {{ {'k': 1} }} {{ 1, 2 }})j"),
            R"j([1, 'a', [2]] (1,) () (1, 2) {'k': 1} (1, 2))j");
  EXPECT_EQ(Render(R"j({{ x.0 }} {{ x.1.0 }})j", R"j({"x": [5, [6, 7]]})j"),
            R"j(5 6)j");
  EXPECT_EQ(Render(R"j({{ {'a': {'b': 1}} }}{% if {'k': {'j': 2}}['k']['j'] == 2 %} ok{% endif %})j"),
            R"j({'a': {'b': 1}} ok)j");
}

TEST(JinjaSyntax, WhitespaceControl) {
  EXPECT_EQ(Render(R"j(a  {{- 'b' -}}  c)j"),
            R"j(abc)j");
  EXPECT_EQ(Render(R"j(a 
 {%- if true -%} 
 b 
 {%- endif -%} 
 c)j"),
            R"j(abc)j");
  EXPECT_EQ(Render(R"j(a {#- c -#} b)j"),
            R"j(ab)j");
  EXPECT_EQ(Render(R"j(a {%+ if true -%} b {%- endif +%} c)j"),
            R"j(a b c)j");
  EXPECT_EQ(Render(R"j(  {{- 'a' }})j"),
            R"j(a)j");
  EXPECT_EQ(Render(R"j({%- set x = 1 -%}

  {{- x -}}

)j"),
            R"j(1)j");
  EXPECT_EQ(Render(R"j({% if true -%}
  a
{%- endif %})j"),
            R"j(a)j");
}

TEST(JinjaSyntax, TrimBlocksAndLstripBlocks) {
  EXPECT_EQ(Render(R"j(  {% if true %}
  hi
  {% endif %}
)j"),
            R"j(  hi
)j");
  EXPECT_EQ(Render(R"j(x
  {%+ if true %}y{% endif %}
)j"),
            R"j(x
  y)j");
  EXPECT_EQ(Render(R"j(x
  {% if true +%}
y{% endif %})j"),
            R"j(x

y)j");
  EXPECT_EQ(Render(R"j(  {# c #}
A)j"),
            R"j(A)j");
  EXPECT_EQ(Render(R"j(a
  {#+ c #}
b)j"),
            R"j(a
  b)j");
  EXPECT_EQ(Render(R"j({% if true %}

{% endif %}z)j"),
            R"j(
z)j");
  EXPECT_EQ(Render(R"j(  {{ 'v' }}
  {% set x = 1 %}
  t)j"),
            R"j(  v
  t)j");
  EXPECT_EQ(Render(R"j(	{% for i in [1,2] %}
	{{ i }}
	{% endfor %}
)j"),
            R"j(	1
	2
)j");
  EXPECT_EQ(Render(R"j(  {%- if true %}
 x{% endif %})j"),
            R"j( x)j");
  EXPECT_EQ(Render(R"j({{ 'a' }}
{{ 'b' }}
)j"),
            R"j(a
b)j");
  EXPECT_EQ(Render(R"j({% for i in [1] %}
  {{ i }}
{% endfor %}
)j"),
            R"j(  1
)j");
  EXPECT_EQ(Render(R"j({% set s %}
  x
{% endset %}[{{ s }}])j"),
            R"j([  x
])j");
  EXPECT_EQ(Render(R"j({# multi
line #}x
{#- c -#}
  y)j"),
            R"j(xy)j");
}

TEST(JinjaSyntax, NewlinesAndRaw) {
  EXPECT_EQ(Render("line1\r\nline2\r\n{{ 'x' }}\r\n"),
            R"j(line1
line2
x)j");
  EXPECT_EQ(Render(R"j(a

)j"),
            R"j(a
)j");
  EXPECT_EQ(Render(R"j(a
)j"),
            R"j(a)j");
  EXPECT_EQ(Render(R"j(a
{% raw %}
x{{y}}
{% endraw %}
b)j"),
            R"j(a

x{{y}}
b)j");
  EXPECT_EQ(Render(R"j({%- raw -%}  {{ x }}  {%- endraw -%}  )j"),
            R"j({{ x }})j");
  EXPECT_EQ(Render(R"j(  {% raw %}a{% endraw %}  
  b)j"),
            R"j(a  
  b)j");
  EXPECT_EQ(Render(R"j({% raw %}{% if %}{% endraw %})j"),
            R"j({% if %})j");
}

TEST(JinjaValues, PythonStrOfNumbers) {
  EXPECT_EQ(Render(R"j({{ 1 }} {{ 1.0 }} {{ 1.5e-7 }} {{ 1e16 }} {{ 123456789012345678 }} {{ 0.1 + 0.2 }} {{ -0.0 }})j"),
            R"j(1 1.0 1.5e-07 1e+16 123456789012345678 0.30000000000000004 -0.0)j");
  EXPECT_EQ(Render(R"j({{ [1e-5, 1e-4, 123456789.123, 1e22, 2.5e-300, 1/3, 100.0, 1e15+0.3] }})j"),
            R"j([1e-05, 0.0001, 123456789.123, 1e+22, 2.5e-300, 0.3333333333333333, 100.0, 1000000000000000.2])j");
  EXPECT_EQ(Render(R"j({{ 0.1 * 3 }} {{ 1e300 * 1e10 }} {{ -1e300 * 1e10 }} {{ 2 ** 62 }} {{ 1/7 }} {{ 5e-324 }} {{ 1.7976931348623157e308 }})j"),
            R"j(0.30000000000000004 inf -inf 4611686018427387904 0.14285714285714285 5e-324 1.7976931348623157e+308)j");
  EXPECT_EQ(Render(R"j({{ 3|float|string }} {{ 12345678901234567890.0 }} {{ 0.000123 }} {{ 123e-20 }} {{ 1234567890123456.7 }} {{ 12345678901234567.0 }})j"),
            R"j(3.0 1.2345678901234567e+19 0.000123 1.23e-18 1234567890123456.8 1.2345678901234568e+16)j");
}

TEST(JinjaValues, PythonReprOfContainers) {
  EXPECT_EQ(Render(R"j({{ ["it's", 'say "hi"', 'both \' "', '\\', '\x7f\x80\xa0\xad'] }})j"),
            R"j(["it's", 'say "hi"', 'both \' "', '\\', '\x7f\x80\xa0\xad'])j");
  EXPECT_EQ(Render(R"j({{ 'a\nb\t\x01\u00e9\u200b' | list }})j"),
            R"j(['a', '\n', 'b', '\t', '\x01', 'é', '\u200b'])j");
  EXPECT_EQ(Render(R"j({{ ['​', '😀', ''] }})j"),
            R"j(['\u200b', '😀', '\x85'])j");
  EXPECT_EQ(Render(R"j({{ {1: 2, 1.0: 3, true: 4} }} {{ {'a': 1, 'a': 2} }})j"),
            R"j({1: 4} {'a': 2})j");
  EXPECT_EQ(Render(R"j({{ [none, true, x] }})j"),
            R"j([None, True, Undefined])j");
  EXPECT_EQ(Render(R"j({% set ns = namespace(a=[1], b='x') %}{{ ns }})j"),
            R"j(<Namespace {'a': [1], 'b': 'x'}>)j");
  EXPECT_EQ(Render(R"j({% macro m() %}{% endmacro %}{{ m }}|{{ m() }}|)j"),
            R"j(<Macro 'm'>||)j");
  EXPECT_EQ(Render(R"j({% for i in [1,2] %}{{ loop }}{% endfor %})j"),
            R"j(<LoopContext 1/2><LoopContext 2/2>)j");
  EXPECT_EQ(Render(R"j({% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %} {{ d.keys() }} {{ d.values() }} {{ d.items() }})j", R"j({"d": {"x": 1, "y": [2]}})j"),
            R"j(x=1;y=[2]; dict_keys(['x', 'y']) dict_values([1, [2]]) dict_items([('x', 1), ('y', [2])]))j");
  EXPECT_EQ(Render(R"j({{ messages[0].content }} {{ messages[0]['content'][0]['text'] }})j", R"j({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image"}]}]})j"),
            R"j([{'type': 'text', 'text': 'hi'}, {'type': 'image'}] hi)j");
}

TEST(JinjaExpressions, Arithmetic) {
  EXPECT_EQ(Render(R"j({{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7 / 2 }} {{ 'ab' * 3 }} {{ 1 + 2.5 }})j"),
            R"j(3 -4 -2 1024 0.5 3.5 ababab 3.5)j");
  EXPECT_EQ(Render(R"j({{ true + 1 }} {{ true * 'ab' }} {{ 3 * [0] }} {{ 1.5 // 0.5 }} {{ -1.5 % 1 }} {{ 2 ** 0.5 }} {{ [1] + [2] }})j"),
            R"j(2 ab [0, 0, 0] 3.0 0.5 1.4142135623730951 [1, 2])j");
  EXPECT_EQ(Render(R"j({{ 'a' ~ 1 ~ none ~ x }})j"),
            R"j(a1None)j");
  EXPECT_EQ(Render(R"j({{ (messages|length) - 1 }} {{ messages|length - 1 }})j", R"j({"messages": [1, 2, 3]})j"),
            R"j(2 2)j");
}

TEST(JinjaExpressions, Precedence) {
  EXPECT_EQ(Render(R"j({{ -1|abs }} {{ - 2 ** 2 }} {{ 2 ** 3 ** 2 }} {{ 10 - 2 - 3 }} {{ 2 * 3 + 4 }} {{ 1 + 2 * 3 }})j"),
            R"j(1 4 64 5 10 7)j");
  EXPECT_EQ(Render(R"j({{ not true == false }} {{ not (true == false) }} {{ -3 ** 2 }} {{ (-3) ** 2 }} {{ 2 * -1 }} {{ 5 - -1 }})j"),
            R"j(True True 9 9 -2 6)j");
  EXPECT_EQ(Render(R"j({{ 1 if x is defined and x else 2 }} {{ x is not defined or x }})j"),
            R"j(2 True)j");
}

TEST(JinjaExpressions, ComparisonsAndLogic) {
  EXPECT_EQ(Render(R"j({{ not 1 in [1] }} {{ 1 not in [2] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ [1,2] == [1,2] }} {{ 1 == 1.0 }})j"),
            R"j(False True True False True True True)j");
  EXPECT_EQ(Render(R"j({{ 'a' in 'abc' }} {{ 'z' not in 'abc' }} {{ 1 in {1: 2} }} {{ [1] in [[1]] }} {{ 'a' in ['a'] }})j"),
            R"j(True True True True True)j");
  EXPECT_EQ(Render(R"j({{ 0 or 'x' }} {{ 1 and 'y' }} {{ '' and 'z' }}|{{ none or [] }})j"),
            R"j(x y |[])j");
  EXPECT_EQ(Render(R"j({{ 1 if false }}|{{ 1 if true }}|{{ 'a' if x else 'b' }})j"),
            R"j(|1|b)j");
}

TEST(JinjaExpressions, SubscriptsAndSlices) {
  EXPECT_EQ(Render(R"j({{ 'abc'[::-1] }} {{ [1,2,3,4][1:3] }} {{ [1,2,3][-1] }} {{ 'héllo'[1] }} {{ 'héllo'|length }})j"),
            R"j(cba [2, 3] 3 é 5)j");
  EXPECT_EQ(Render(R"j({% set x = [1,2,3] %}{{ x[0] }}{{ x[-1] }}{{ x[5] is defined }}{{ x[1:] }}{{ x[:-1] }}{{ x[::2] }}{{ x[10:] }}{{ x[-10:1] }})j"),
            R"j(13False[2, 3][1, 2][1, 3][][1])j");
  EXPECT_EQ(Render(R"j({% set s = 'hello' %}{{ s[1:-1] }}{{ s[::-2] }}{{ s[-100:100] }}{{ s[x] }})j"),
            R"j(ellolhhello)j");
  EXPECT_EQ(Render(R"j({% set x = {'k': [1, {'j': 'v'}]} %}{{ x.k.1.j }} {{ x['k'][1]['j'] }} {{ x.k[1].j }})j"),
            R"j(v v v)j");
  EXPECT_EQ(Render(R"j({{ (1, 2)[0] }} {{ [(1,2)][0][1] }})j"),
            R"j(1 2)j");
  EXPECT_EQ(Render(R"j({{ d.items is callable }}|{{ d['items'] }}|{{ d.pop is defined }})j", R"j({"d": {"items": 5}})j"),
            R"j(True|5|False)j");
}

TEST(JinjaStatements, IfAndFor) {
  EXPECT_EQ(Render(R"j({%- for m in messages -%}
[{{ m.role }}:{{ m['content'] | trim }}]
{%- endfor %})j", R"j({"messages": [{"role": "user", "content": " hi "}, {"role": "assistant", "content": "yo"}]})j"),
            R"j([user:hi][assistant:yo])j");
  EXPECT_EQ(Render(R"j({% if 0 %}a{% elif '' %}b{% elif [1] %}c{% else %}d{% endif %})j"),
            R"j(c)j");
  EXPECT_EQ(Render(R"j({% if 1, 2 %}y{% endif %})j"),
            R"j(y)j");
  EXPECT_EQ(Render(R"j({% for x in [1,2,3] if x != 2 %}{{ loop.index }}/{{ loop.length }}:{{ x }}{{ ',' if not loop.last }}{% else %}none{% endfor %})j"),
            R"j(1/2:1,2/2:3)j");
  EXPECT_EQ(Render(R"j({% for x in [] %}a{% else %}empty{% endfor %})j"),
            R"j(empty)j");
  EXPECT_EQ(Render(R"j({% for x in 1, 2 %}{{ x }}{% endfor %})j"),
            R"j(12)j");
  EXPECT_EQ(Render(R"j({% for k in {'b':1,'a':2} %}{{ k }}{% endfor %} {% for a, b in [[1,2],[3,4]] %}{{ a+b }}{% endfor %} {% for a, b in ['xy'] %}{{ a }}{{ b }}{% endfor %})j"),
            R"j(ba 37 xy)j");
  EXPECT_EQ(Render(R"j({% for a, b in {'x': 1}|dictsort %}{{ a }}{{ b }}{% endfor %}{% for a, b in [(1, 2)] %}{{ a }}{{ b }}{% endfor %})j"),
            R"j(x112)j");
}

TEST(JinjaStatements, LoopVariable) {
  EXPECT_EQ(Render(R"j({% for x in 'abc' %}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.previtem }}{{ loop.nextitem }}|{% endfor %})j"),
            R"j(032TrueFalseb|121FalseFalseac|210FalseTrueb|)j");
  EXPECT_EQ(Render(R"j({% for x in [1,2,3] %}{{ loop.cycle('a','b') }}{{ loop.changed(x > 1) }}{{ loop.depth }}{% endfor %})j"),
            R"j(aTrue1bTrue1aFalse1)j");
  EXPECT_EQ(Render(R"j({% for a in [1,2] %}{% for b in [3,4] %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}{% endfor %})j"),
            R"j(113 214 1123 224 2)j");
  EXPECT_EQ(Render(R"j({% for m in msgs %}{% if loop.changed(m.role) %}[{{ m.role }}]{% endif %}{{ m.c }}{% endfor %})j", R"j({"msgs": [{"role": "u", "c": 1}, {"role": "u", "c": 2}, {"role": "a", "c": 3}]})j"),
            R"j([u]12[a]3)j");
}

TEST(JinjaStatements, LoopControls) {
  EXPECT_EQ(Render(R"j({% for x in [1,2,3,4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %})j"),
            R"j(13)j");
  EXPECT_EQ(Render(R"j({% for a in [1,2] %}{% for b in [1,2,3] %}{% if b == 2 %}{% break %}{% endif %}{{ a }}{{ b }}{% endfor %}{% endfor %})j"),
            R"j(1121)j");
}

TEST(JinjaStatements, SetAndNamespace) {
  EXPECT_EQ(Render(R"j({% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c %}block {{ a }}{% endset %}[{{ c }}])j"),
            R"j(12[block 1])j");
  EXPECT_EQ(Render(R"j({% set c | upper %}block{% endset %}{{ c }})j"),
            R"j(BLOCK)j");
  EXPECT_EQ(Render(R"j({% set x = 1, %}{{ x }})j"),
            R"j((1,))j");
  EXPECT_EQ(Render(R"j({% set ns = namespace(a=1) %}{% for i in range(3) %}{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }})j"),
            R"j(4)j");
  EXPECT_EQ(Render(R"j({% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns['a'] }}{{ ns.c is defined }})j"),
            R"j(121False)j");
}

TEST(JinjaStatements, Scoping) {
  EXPECT_EQ(Render(R"j({% for i in range(3) %}{% if i == 0 %}{% set x = 'a' %}{% endif %}[{{ x }}]{% endfor %})j"),
            R"j([a][][])j");
  EXPECT_EQ(Render(R"j({% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }})j"),
            R"j(21)j");
  EXPECT_EQ(Render(R"j({% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }})j"),
            R"j(2)j");
  EXPECT_EQ(Render(R"j({% for x in range(3) %}{{ x }}{% endfor %}[{{ x }}])j"),
            R"j(012[])j");
  EXPECT_EQ(Render(R"j([{{ x }}]{% set x = 1 %}[{{ x }}])j"),
            R"j([][1])j");
  EXPECT_EQ(Render(R"j({% set x = 1 %}{% with x = x + 1 %}{{ x }}{% endwith %}{{ x }})j"),
            R"j(21)j");
  EXPECT_EQ(Render(R"j({% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }})j"),
            R"j(3)j");
}

TEST(JinjaStatements, Macros) {
  EXPECT_EQ(Render(R"j({% macro f(a, b=2) %}{{ a }}-{{ b }}{% endmacro %}{{ f(1) }} {{ f(1, b=3) }} {{ f(b=5, a=4) }})j"),
            R"j(1-2 1-3 4-5)j");
  EXPECT_EQ(Render(R"j({% set x = 5 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 6 %}{{ m() }})j"),
            R"j(6)j");
  EXPECT_EQ(Render(R"j({% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k=4) }})j"),
            R"j(1(2, 3){'k': 4})j");
  EXPECT_EQ(Render(R"j({% macro m(a) %}{{ a }}{% endmacro %}{{ m() }}|{{ m(1) }})j"),
            R"j(|1)j");
  EXPECT_EQ(Render(R"j({% macro m(a, b=a) %}{{ a }}{{ b }}{% endmacro %}{{ m(3) }})j"),
            R"j(33)j");
  EXPECT_EQ(Render(R"j({% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}{{ r(5) }})j"),
            R"j(54321)j");
  EXPECT_EQ(Render(R"j({% set ns = namespace(v=[]) %}{% macro add(x) %}{% set ns.v = ns.v + [x] %}{% endmacro %}{{ add(1) }}{{ add(2) }}{{ ns.v }})j"),
            R"j([1, 2])j");
  EXPECT_EQ(Render(R"j({% macro f() %}a{% endmacro %}{{ f() }}{% macro f() %}b{% endmacro %}{{ f() }})j"),
            R"j(ab)j");
}

TEST(JinjaStatements, CallFilterWithGenerationPrint) {
  EXPECT_EQ(Render(R"j({% macro outer() %}[{{ caller() }}]{% endmacro %}{% call outer() %}inside{% endcall %})j"),
            R"j([inside])j");
  EXPECT_EQ(Render(R"j({% macro outer() %}[{{ caller(5) }}]{% endmacro %}{% call(n) outer() %}n={{ n }}{% endcall %})j"),
            R"j([n=5])j");
  EXPECT_EQ(Render(R"j({% filter title %}hello world{% endfilter %}{% filter upper|replace('A', '4') %}abc{% endfilter %})j"),
            R"j(Hello World4BC)j");
  EXPECT_EQ(Render(R"j({% generation %}gen {{ 1 }}{% endgeneration %})j"),
            R"j(gen 1)j");
  EXPECT_EQ(Render(R"j({% for m in [1,2] %}{% generation %}{{ m }}{% endgeneration %}{% endfor %})j"),
            R"j(12)j");
  EXPECT_EQ(Render(R"j({% print 1, 2 %})j"),
            R"j(12)j");
}

TEST(JinjaFilters, Strings) {
  EXPECT_EQ(Render(R"j({{ 'hello world'|title }} {{ 'hELLO'|capitalize }} {{ 'a-b c(d'|title }} {{ 'abc'|center(9) }}| {{ 'x'|upper }} {{ 'X'|lower }})j"),
            R"j(Hello World Hello A-B C(D    abc   | X x)j");
  EXPECT_EQ(Render(R"j({{ '  a b  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ 'a\nb'|indent(2) }}|{{ 'hello world'|wordcount }}|{{ 'abc'|replace('b','X') }}|{{ 'aaa'|replace('a','b',2) }})j"),
            R"j(a b|a|a
  b|2|aXc|bba)j");
  EXPECT_EQ(Render(R"j({{ 'a\nb'|indent }}|{{ 'a\n\nb\n'|indent(2, true) }}|{{ 'a\n\nb'|indent(2, blank=true) }}|{{ 'a\nb'|indent('> ') }})j"),
            R"j(a
    b|  a

  b
|a
  
  b|a
> b)j");
  EXPECT_EQ(Render(R"j({{ 'hello world foo'|truncate(9) }}|{{ 'hello world foo bar baz'|truncate(9, True) }}|{{ 'hello world foo bar baz'|truncate(12, leeway=0) }}|{{ 'hello'|truncate(3, end='') }})j"),
            R"j(hello...|hello ...|hello...|hello)j");
  EXPECT_EQ(Render(R"j({{ '<a href="x">&'|e }} {{ '<b>'|escape }} {{ ('<b>'|safe) + '<' }} {{ '<x>'|e|e }} {{ '<x>'|forceescape }} {{ 5|string }})j"),
            R"j(&lt;a href=&#34;x&#34;&gt;&amp; &lt;b&gt; <b>&lt; &lt;x&gt; &lt;x&gt; 5)j");
  EXPECT_EQ(Render(R"j({{ '%s and %d' % ('x', 3) }} {{ '%(a)s' % {'a': 1} }} {{ '%5.2f|%-5s|%05d' % (3.14159, 'ab', 42) }} {{ 'v=%s'|format(3) }})j"),
            R"j(x and 3 1  3.14|ab   |00042 v=3)j");
  EXPECT_EQ(Render(R"j({{ '%s' % none }} {{ '%r' % 'x' }} {{ '%x %o %e' % (255, 8, 1234.5) }} {{ '%.2s' % 'abc' }} {{ '%c' % 65 }} {{ '%+d % d' % (5, 5) }})j"),
            R"j(None 'x' ff 10 1.234500e+03 ab A +5  5)j");
}

TEST(JinjaFilters, Numbers) {
  EXPECT_EQ(Render(R"j({{ 3.7|int }} {{ '42'|int }} {{ 'x'|int(7) }} {{ '3.5'|float }} {{ 2|float }} {{ 2.5|round }} {{ 3.14159|round(2) }} {{ 3.2|round(0, 'ceil') }} {{ 3.8|round(0, 'floor') }})j"),
            R"j(3 42 7 3.5 2.0 2.0 3.14 4.0 3.0)j");
  EXPECT_EQ(Render(R"j({{ 5|round }} {{ 2.675|round(2) }} {{ 1234.5|round(-2) }} {{ (-0.5)|round }} {{ -3|abs }} {{ -2.5|abs }})j"),
            R"j(5 2.67 1200.0 -0.0 3 2.5)j");
  EXPECT_EQ(Render(R"j({{ '  3 '|int }} {{ '0x1A'|int(0,16) }} {{ '0x1A'|int(base=0) }} {{ '3.7'|int }} {{ none|int }} {{ '1_000'|int }} {{ 'abc'|float }} {{ ' 1e3 '|float }} {{ 'inf'|float }})j"),
            R"j(3 26 26 3 0 1000 0.0 1000.0 inf)j");
}

TEST(JinjaFilters, Sequences) {
  EXPECT_EQ(Render(R"j({{ [1,2,3]|join('-') }} {{ [{'a':1},{'a':2}]|join(',', attribute='a') }} {{ [1,2]|first }} {{ [1,2]|last }} {{ 'abc'|last }} {{ 'abc'|first }})j"),
            R"j(1-2-3 1,2 1 2 c a)j");
  EXPECT_EQ(Render(R"j({{ 'abc'|list }} {{ {'a':1}|list }} {{ [1,2,3]|length }} {{ 'héllo'|count }} {{ {'a':1}|length }} {{ x|length }})j"),
            R"j(['a', 'b', 'c'] ['a'] 3 5 1 0)j");
  EXPECT_EQ(Render(R"j({{ [3,1,2]|sort }} {{ [3,1,2]|max }} {{ ['a','B']|min }} {{ [3,1,2]|sort(reverse=true) }} {{ ['b','A','a']|sort }})j"),
            R"j([1, 2, 3] 3 a [3, 2, 1] ['A', 'a', 'b'])j");
  EXPECT_EQ(Render(R"j({{ ['b','a','C']|sort(case_sensitive=true) }} {{ [[2,'b'],[1,'a']]|sort }} {{ [{'a':2,'b':1},{'a':1,'b':2}]|sort(attribute='b,a') }})j"),
            R"j(['C', 'a', 'b'] [[1, 'a'], [2, 'b']] [{'a': 2, 'b': 1}, {'a': 1, 'b': 2}])j");
  EXPECT_EQ(Render(R"j({{ [{'n':'b','v':2},{'n':'a','v':1}]|sort(attribute='n')|map(attribute='v')|list }} {{ [{'a': 3}, {'a': 1}] | max(attribute='a') }} {{ ['B', 'a'] | max }} {{ ['B', 'a'] | max(case_sensitive=true) }})j"),
            R"j([1, 2] {'a': 3} B a)j");
  EXPECT_EQ(Render(R"j({{ [1,2,2,3,1]|unique|list }} {{ ['a','A']|unique|list }} {{ [1,2]|reverse|list }} {{ 'abc'|reverse }} {{ [1,2,3]|sum }} {{ [{'a':1},{'a':2}]|sum(attribute='a') }} {{ [[1],[2]]|sum(start=[]) }})j"),
            R"j([1, 2, 3] ['a'] [2, 1] cba 6 3 [1, 2])j");
  EXPECT_EQ(Render(R"j({{ [1,2,3,4,5]|batch(2)|list }} {{ [1,2,3,4,5]|slice(3)|list }} {{ ['x','y']|batch(3, '-')|list }})j"),
            R"j([[1, 2], [3, 4], [5]] [[1, 2], [3, 4], [5]] [['x', 'y', '-']])j");
  EXPECT_EQ(Render(R"j({{ [{'g':'a','v':1},{'g':'b','v':2},{'g':'a','v':3}]|groupby('g') }}{% for grp in [{'g':'a'}]|groupby('g') %}{{ grp.grouper }}{{ grp.list }}{% endfor %})j"),
            R"j([('a', [{'g': 'a', 'v': 1}, {'g': 'a', 'v': 3}]), ('b', [{'g': 'b', 'v': 2}])]a[{'g': 'a'}])j");
  EXPECT_EQ(Render(R"j({{ {'b':1,'a':2}|dictsort }} {{ {'b':1,'A':2}|dictsort(by='value', reverse=true) }} {{ {'b':1,'a':2}|items|list }} {{ x|items|list }})j"),
            R"j([('a', 2), ('b', 1)] [('A', 2), ('b', 1)] [('b', 1), ('a', 2)] [])j");
}

TEST(JinjaFilters, SelectRejectMap) {
  EXPECT_EQ(Render(R"j({{ [1,2,3,4]|select('odd')|list }} {{ [1,2,3,4]|reject('odd')|list }} {{ [0,1,'',none,'a']|select|list }})j"),
            R"j([1, 3] [2, 4] [1, 'a'])j");
  EXPECT_EQ(Render(R"j({{ [{'a':1},{'a':none},{}]|selectattr('a')|list }} {{ [{'a':1},{'b':2}]|rejectattr('a', 'defined')|list }})j"),
            R"j([{'a': 1}] [{'b': 2}])j");
  EXPECT_EQ(Render(R"j({{ ['a','b']|map('upper')|list }} {{ [{'x':{'y':1}},{}]|map(attribute='x.y', default=0)|list }} {{ [1.5]|map('int')|list }})j"),
            R"j(['A', 'B'] [1, 0] [1])j");
  EXPECT_EQ(Render(R"j({{ messages|selectattr('role', 'equalto', 'user')|list|length }} {{ messages|map(attribute='role')|join(',') }})j", R"j({"messages": [{"role": "user"}, {"role": "assistant"}, {"role": "user"}]})j"),
            R"j(2 user,assistant,user)j");
  EXPECT_EQ(Render(R"j({{ messages | selectattr('role', 'in', ['user', 'system']) | list | length }})j", R"j({"messages": [{"role": "user"}, {"role": "tool"}, {"role": "system"}]})j"),
            R"j(2)j");
  EXPECT_EQ(Render(R"j({% set g = [1,2,3]|map('string') %}{{ g|list }}{{ g|list }})j"),
            R"j(['1', '2', '3'][])j");
  EXPECT_EQ(Render(R"j({% set g = [1,2,3]|select %}{% for x in g %}{{ x }}{% endfor %}{% for x in g %}{{ x }}{% endfor %}|{{ [] | select | list }}{% if []|select %}truthy{% endif %})j"),
            R"j(123|[]truthy)j");
}

TEST(JinjaFilters, DefaultAndAttr) {
  EXPECT_EQ(Render(R"j({{ x | default('d') }} {{ '' | default('e', true) }} {{ none | default('n') }} {{ 0|d(5, true) }} {{ 0|d(5) }})j"),
            R"j(d e None 5 0)j");
  EXPECT_EQ(Render(R"j({% set ns = namespace(v=3) %}{{ d|attr('keys') is defined }} {{ d|attr('a') is defined }} {{ ns|attr('v') }})j", R"j({"d": {"a": 1}})j"),
            R"j(True False 3)j");
}

TEST(JinjaFilters, ToJson) {
  EXPECT_EQ(Render(R"j({{ {'b': [1, 2.5, 'é', none, true], 'a': {'c': '"\n'}} | tojson }}|{{ [1,[2,{}]]|tojson(indent=2) }})j"),
            R"j({"b": [1, 2.5, "é", null, true], "a": {"c": "\"\n"}}|[
  1,
  [
    2,
    {}
  ]
])j");
  EXPECT_EQ(Render(R"j({{ [1, 2]|tojson }} {{ 'é'|tojson }} {{ 'é'|tojson(ensure_ascii=true) }} {{ '😀é'|tojson(ensure_ascii=true) }} {{ {'b':1,'a':2}|tojson(sort_keys=true) }})j"),
            R"j([1, 2] "é" "\u00e9" "\ud83d\ude00\u00e9" {"a": 2, "b": 1})j");
  EXPECT_EQ(Render(R"j({{ {'a':[1,2]}|tojson(indent=2) }} {{ {'a':1, 'b': [2]}|tojson(separators=(',',':')) }} {{ {'a': 'b'}|tojson(indent='\t') }})j"),
            R"j({
  "a": [
    1,
    2
  ]
} {"a":1,"b":[2]} {
	"a": "b"
})j");
  EXPECT_EQ(Render(R"j({{ [1.0, -0.0, 1e100, 3.5e-8]|tojson }} {{ 'ctl\x01\x1f\x7f'|tojson }} {{ (1, 2)|tojson }} {{ {1: 'a', none: 'b', true: 'c'}|tojson }})j"),
            R"j([1.0, -0.0, 1e+100, 3.5e-08] "ctl\u0001\u001f" [1, 2] {"1": "c", "null": "b"})j");
  EXPECT_EQ(Render(R"j({{ tools|tojson }})j", R"j({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": {"b": [true, null, 1.5]}}}}]})j"),
            R"j([{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": {"b": [true, null, 1.5]}}}}])j");
}

TEST(JinjaTests, All) {
  EXPECT_EQ(Render(R"j({{ 'x' is string }} {{ 1 is number }} {{ 1 is integer }} {{ 1.0 is float }} {{ {} is mapping }} {{ [] is iterable }} {{ 3 is odd }} {{ 4 is divisibleby 2 }} {{ none is none }} {{ true is true }} {{ 1 is true }})j"),
            R"j(True True True True True True True True True True False)j");
  EXPECT_EQ(Render(R"j({{ x is undefined }} {{ x is defined }} {{ 1 is not none }} {{ false is boolean }} {{ 0 is false }} {{ 2 is even }} {{ 9 is divisibleby(3) }})j"),
            R"j(True False True True False True True)j");
  EXPECT_EQ(Render(R"j({{ 'Ab Cd'|lower is lower }} {{ 'AB' is upper }} {{ 5 is sameas 5 }} {{ none is sameas none }} {{ [] is sameas [] }} {{ x is sequence }} {{ {} is sequence }} {{ 3.0 is odd }})j"),
            R"j(True True True True False True True True)j");
  EXPECT_EQ(Render(R"j({{ 5 is eq 5 }} {{ 5 is ne 4 }} {{ 5 is gt 4 }} {{ 5 is ge 5 }} {{ 5 is lt 4 }} {{ 5 is le 5 }} {{ 5 is in [5] }} {{ 5 is equalto 5 }})j"),
            R"j(True True True True False True True True)j");
  EXPECT_EQ(Render(R"j({{ f is callable }} {% macro f() %}{% endmacro %}{{ f is callable }} {{ range is callable }} {{ 'x'.upper is callable }} {{ 1 is callable }})j"),
            R"j(True True True True False)j");
  EXPECT_EQ(Render(R"j({{ 'a' is escaped }} {{ 'a'|e is escaped }} {{ 'upper' is filter }} {{ 'odd' is test }} {{ 'zzz' is filter }})j"),
            R"j(False True True True False)j");
  EXPECT_EQ(Render(R"j({% if content is string %}s{% elif content is iterable %}{% for p in content %}{{ p.type }}{% endfor %}{% endif %})j", R"j({"content": [{"type": "text"}]})j"),
            R"j(text)j");
}

TEST(JinjaMethods, Strings) {
  EXPECT_EQ(Render(R"j({{ 'a b  c'.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.rsplit(',', 1) }} {{ '  x  '.strip() }} {{ 'xxaxx'.strip('x') }} {{ ' x '.lstrip() }}|{{ ' x '.rstrip() }}|)j"),
            R"j(['a', 'b', 'c'] ['a', 'b', '', 'c'] ['a,b', 'c'] x a x | x|)j");
  EXPECT_EQ(Render(R"j({{ '  a  b  '.split(none, 1) }} {{ '  a  b  '.rsplit(none, 1) }} {{ 'a b c'.split(' ', 1) }} {{ ''.split() }} {{ ''.split(',') }})j"),
            R"j(['a', 'b  '] ['  a', 'b'] ['a', 'b c'] [] [''])j");
  EXPECT_EQ(Render(R"j({{ 'Hello World'.startswith(('He', 'x')) }} {{ 'abc'.endswith('bc') }} {{ 'abcabc'.find('c') }} {{ 'abcabc'.rfind('c') }} {{ 'aaa'.count('a') }} {{ 'abc'.find('z') }})j"),
            R"j(True True 2 5 3 -1)j");
  EXPECT_EQ(Render(R"j({{ 'Hello'.upper() }} {{ 'Hello'.lower() }} {{ 'hello world'.title() }} {{ 'hello'.capitalize() }} {{ 'Hi'.swapcase() }})j"),
            R"j(HELLO hello Hello World Hello hI)j");
  EXPECT_EQ(Render(R"j({{ 'a-b-c'.replace('-', '+') }} {{ 'abc'.replace('', '.') }} {{ '42'.isdigit() }} {{ 'ab'.isalpha() }} {{ ' '.isspace() }} {{ ''.isspace() }} {{ 'Ab'.istitle() }} {{ 'ab'.islower() }})j"),
            R"j(a+b+c .a.b.c. True True True False True True)j");
  EXPECT_EQ(Render(R"j({{ 'a\nb\r\nc'.splitlines() }} {{ 'x'.join(['1','2']) }} {{ 'ab'.center(6, '*') }} {{ '5'.zfill(3) }} {{ '-5'.zfill(4) }} {{ 'ab'.ljust(4) }}|{{ 'ab'.rjust(4) }})j"),
            R"j(['a', 'b', 'c'] 1x2 **ab** 005 -005 ab  |  ab)j");
  EXPECT_EQ(Render(R"j({{ 'a=b=c'.partition('=') }} {{ 'a=b=c'.rpartition('=') }} {{ 'prefix_x'.removeprefix('prefix_') }} {{ 'abc'.index('c') }})j"),
            R"j(('a', '=', 'b=c') ('a=b', '=', 'c') x 2)j");
  EXPECT_EQ(Render(R"j({{ '<think>x</think>\n\nans'.split('</think>')[-1].lstrip('\n') }})j"),
            R"j(ans)j");
  EXPECT_EQ(Render(R"j({{ '{} and {}'.format(1, 'b') }} {{ '{0}{1}{0}'.format('a','b') }} {{ '{x:>4}'.format(x=5) }} {{ '{:,}'.format(1234567) }} {{ '{:.3e}'.format(12345.678) }})j"),
            R"j(1 and b aba    5 1,234,567 1.235e+04)j");
  EXPECT_EQ(Render(R"j({{ '{}'.format([1, 'a']) }} {{ '{!r}'.format('a') }} {{ '{:5}|{:<5}|{:^5}|{:>5}'.format('ab', 1, 'c', 2.5) }} {{ '{:08.3f}'.format(-3.14159) }} {{ '{:x}'.format(255) }} {{ '{:%}'.format(0.25) }})j"),
            R"j([1, 'a'] 'a' ab   |1    |  c  |  2.5 -003.142 ff 25.000000%)j");
  EXPECT_EQ(Render(R"j({{ 'ÉCOLE'.lower() }} {{ 'straße'.upper() }} {{ 'ǆ'.capitalize() }} {{ 'éa'|title }} {{ 'Ω'|length }} {{ '日本語'[1:] }} {{ '日本語'|reverse }})j"),
            R"j(école STRASSE ǅ Éa 1 本語 語本日)j");
  EXPECT_EQ(Render(R"j({{ '　x '.strip() }}|{{ 'a b'.splitlines() }})j"),
            R"j(x|['a', 'b'])j");
}

TEST(JinjaMethods, DictsAndLists) {
  EXPECT_EQ(Render(R"j({{ d.get('a') }} {{ d.get('z', 'dflt') }} {{ d.get('z') }} {{ d.keys()|list }} {{ 'a' in d }} {{ 'a' in d.keys() }} {{ d.copy() }})j", R"j({"d": {"a": 1}})j"),
            R"j(1 dflt None ['a'] True True {'a': 1})j");
  EXPECT_EQ(Render(R"j({{ [1,2,1].count(1) }} {{ [1,2].index(2) }} {{ (1,2).count(2) }} {{ [1].copy() }})j"),
            R"j(2 1 1 [1])j");
  EXPECT_EQ(Render(R"j({{ {'a': 1} | items | list }} {{ {'a': 1}.items() | list }} {% set d = {'a': 1} %}{{ d | dictsort | first }} {{ d.a }} {{ d['a'] }})j"),
            R"j([('a', 1)] [('a', 1)] ('a', 1) 1 1)j");
}

TEST(JinjaGlobals, RangeDictCyclerJoiner) {
  EXPECT_EQ(Render(R"j({{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} {{ dict(a=1, b=2) }} {{ dict([('x', 1)]) }} {{ dict({'a':1}, b=2) }})j"),
            R"j([0, 1, 2] [1, 4, 7] [5, 3, 1] {'a': 1, 'b': 2} {'x': 1} {'a': 1, 'b': 2})j");
  EXPECT_EQ(Render(R"j({% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}{% set j = joiner('|') %}{{ j() }}x{{ j() }}y{{ j() }})j"),
            R"j(ababx|y|)j");
  EXPECT_EQ(Render(R"j({{ strftime_now('%d %b %Y %H:%M:%S.%f %A %j %p %I') }})j"),
            R"j(05 Jul 2024 14:03:09.123456 Friday 187 PM 02)j");
  EXPECT_EQ(Render(R"j({{ strftime_now('%Y-%m-%d %a %B %e|%-d|%y %U %W %V %G %u %w %C %D %F %T %R %r %c %x %X %Z%z %%') }} {{ strftime_now('%q %5d') }})j"),
            R"j(2024-07-05 Fri July  5|5|24 26 27 27 2024 5 5 20 07/05/24 2024-07-05 14:03:09 14:03 02:03:09 PM Fri Jul  5 14:03:09 2024 07/05/24 14:03:09  % %q 00005)j");
}

TEST(JinjaUndefined, BehavesLikeJinja2) {
  EXPECT_EQ(Render(R"j({{ x }}|{{ x|length }}|{{ x|list }}|{{ x|default('d') }}|{% for i in x %}no{% endfor %}|{{ x is defined }}|{{ x == x }}|{{ x|string }}|{{ x|join }}|{{ x|trim }}|{{ x|upper }})j"),
            R"j(|0|[]|d||False|True||||)j");
  EXPECT_EQ(Render(R"j({{ d.missing }}|{{ d['missing'] }}|{{ l[10] }}|{{ l[1:100] }}|{{ 'a' in x }})j", R"j({"d": {}, "l": [1, 2]})j"),
            R"j(|||[2]|False)j");
  EXPECT_EQ(Render(R"j({{ x|first }}|{{ x|last }}|{{ []|first }}|{{ []|max }}|{{ x|items|list }}|{{ x|reverse|list }})j"),
            R"j(||||[]|[])j");
  EXPECT_EQ(Render(R"j({% if false %}{% macro f() %}x{% endmacro %}{% endif %}{{ f is defined }})j"),
            R"j(False)j");
}

TEST(JinjaErrors, SyntaxErrorsNameLineColumnAndWhatWasExpected) {
  const struct {
    const char* source;
    const char* message;
  } cases[] = {
      {"{% if true %}",
       "jinja: line 1, column 14: Unexpected end of template. Jinja was looking for the following "
       "tags: 'elif' or 'else' or 'endif'. The innermost block that needs to be closed is 'if'."},
      {"a\n\n  {{ 1 + }}", "jinja: line 3, column 10: unexpected 'end of print statement'"},
      {"{% for x in y %}{% endif %}",
       "jinja: line 1, column 20: Encountered unknown tag 'endif'. Jinja was looking for the "
       "following tags: 'endfor' or 'else'. The innermost block that needs to be closed is 'for'."},
      {"{% set 1 = 2 %}", "jinja: line 1, column 8: can't assign to 'const'"},
      {"{{ (1 }}", "jinja: line 1, column 7: unexpected '}', expected ')'"},
      {"{# never closed", "jinja: line 1, column 1: Missing end of comment tag"},
      {"{% raw %}never closed", "jinja: line 1, column 10: Missing end of raw directive"},
      {"{{ 5 is == 5 }}", "jinja: line 1, column 9: expected token 'name', got '=='"},
      {"{% macro m(a=1, b) %}{% endmacro %}",
       "jinja: line 1, column 18: non-default argument follows default argument"},
      {"{% break %}", "jinja: line 1, column 4: 'break' outside of a for loop"},
      {"{{ 'unterminated }}", "jinja: line 1, column 4: unexpected char '''"},
      {"x\n{{ 1 ! 2 }}", "jinja: line 2, column 6: unexpected char '!'"},
      {"{{ '\\x4' }}", "jinja: line 1, column 4: truncated \\xXX escape"},
      {"{{ 99999999999999999999 }}",
       "jinja: line 1, column 4: integer literal 99999999999999999999 does not fit in 64 bits"},
      {"{% foo %}", "jinja: line 1, column 4: Encountered unknown tag 'foo'."},
      {"{{ }}", "jinja: line 1, column 4: Expected an expression, got 'end of print statement'"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<Template> t = Template::Parse(c.source);
    ASSERT_FALSE(t.ok()) << c.source;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << c.source;
    EXPECT_EQ(t.status().message(), c.message) << c.source;
  }
}

TEST(JinjaErrors, UnsupportedFeaturesAreUnimplementedAndNamed) {
  EXPECT_EQ(Template::Parse("{% include 'other.jinja' %}").status(),
            absl::UnimplementedError("jinja: tag 'include' is not supported (line 1, column 4)"));
  EXPECT_EQ(Template::Parse("{% extends 'base' %}").status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(Template::Parse("{% for x in xs recursive %}{% endfor %}").status(),
            absl::UnimplementedError("jinja: recursive loops are not supported (line 1, column 16)"));
  EXPECT_EQ(RenderError("\n\n{{ 1|xmlattr }}"),
            absl::UnimplementedError("jinja: filter 'xmlattr' is not supported (line 3)"));
  EXPECT_EQ(RenderError("{{ lipsum() }}"),
            absl::UnimplementedError("jinja: global 'lipsum' is not supported (line 1)"));
  EXPECT_EQ(RenderError("{{ 'x'.encode() }}"),
            absl::UnimplementedError("jinja: string method 'encode' is not supported (line 1)"));
  // Only reached branches matter, as in jinja2 inside an if.
  EXPECT_EQ(Render("{% if false %}{{ 1|xmlattr }}{% endif %}ok"), "ok");
}

TEST(JinjaErrors, RenderErrorsNameTheLine) {
  EXPECT_EQ(RenderError("line1\n{{ messages[0].content.missing.x }}",
                        R"({"messages": [{"content": "c"}]})"),
            absl::InvalidArgumentError("jinja: line 2: 'str object' has no attribute 'missing'"));
  EXPECT_EQ(RenderError("{{ d.missing.deeper }}", R"({"d": {}})"),
            absl::InvalidArgumentError("jinja: line 1: 'dict object' has no attribute 'missing'"));
  EXPECT_EQ(RenderError("{{ x() }}"), absl::InvalidArgumentError("jinja: line 1: 'x' is undefined"));
  EXPECT_EQ(RenderError("{{ x + 1 }}"), absl::InvalidArgumentError("jinja: line 1: 'x' is undefined"));
  EXPECT_EQ(RenderError("{{ x < 1 }}").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RenderError("{{ x|int }}").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RenderError("{{ none.x.y }}"),
            absl::InvalidArgumentError("jinja: line 1: 'None' has no attribute 'x'"));
  EXPECT_EQ(RenderError("{{ [].append(1) }}"),
            absl::InvalidArgumentError(
                "jinja: line 1: access to attribute 'append' of 'list' object is unsafe."));
  EXPECT_EQ(RenderError("{{ {}.update({}) }}").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RenderError("{{ 1 + 'a' }}"),
            absl::InvalidArgumentError(
                "jinja: line 1: unsupported operand type(s) for +: 'int' and 'str'"));
  EXPECT_EQ(RenderError("{{ 'a' + 1 }}"),
            absl::InvalidArgumentError(
                "jinja: line 1: can only concatenate str (not \"int\") to str"));
  EXPECT_EQ(RenderError("{{ 1 / 0 }}"), absl::InvalidArgumentError("jinja: line 1: division by zero"));
  EXPECT_EQ(RenderError("{{ 'a' < 1 }}"),
            absl::InvalidArgumentError(
                "jinja: line 1: '<' not supported between instances of 'str' and 'int'"));
  EXPECT_EQ(RenderError("{{ 1|nosuch }}"),
            absl::InvalidArgumentError("jinja: line 1: No filter named 'nosuch'."));
  EXPECT_EQ(RenderError("{{ 1 is nosuch }}"),
            absl::InvalidArgumentError("jinja: line 1: No test named 'nosuch'."));
  EXPECT_EQ(RenderError("{% for x in 5 %}{% endfor %}"),
            absl::InvalidArgumentError("jinja: line 1: 'int' object is not iterable"));
  EXPECT_EQ(RenderError("{% for a, b in [1] %}{% endfor %}"),
            absl::InvalidArgumentError("jinja: line 1: cannot unpack non-iterable int object"));
  EXPECT_EQ(RenderError("{% set a, b = [1] %}"),
            absl::InvalidArgumentError(
                "jinja: line 1: not enough values to unpack (expected 2, got 1)"));
  EXPECT_EQ(RenderError("{% macro m() %}{% endmacro %}{{ m(1) }}"),
            absl::InvalidArgumentError("jinja: line 1: macro 'm' takes not more than 0 argument(s)"));
  EXPECT_EQ(RenderError("{% macro m() %}{% endmacro %}{{ m(k=1) }}"),
            absl::InvalidArgumentError("jinja: line 1: macro 'm' takes no keyword argument 'k'"));
  EXPECT_EQ(RenderError("{% set ns = 5 %}{% set ns.x = 1 %}"),
            absl::InvalidArgumentError(
                "jinja: line 1: cannot assign attribute on non-namespace object"));
  EXPECT_EQ(RenderError("{{ f() }}{% macro f() %}x{% endmacro %}"),
            absl::InvalidArgumentError("jinja: line 1: 'f' is undefined"));
  EXPECT_EQ(RenderError("{{ [1,2]|map('string')|length }}"),
            absl::InvalidArgumentError("jinja: line 1: object of type 'generator' has no len()"));
  EXPECT_EQ(RenderError("{{ 'ab'.split('') }}"),
            absl::InvalidArgumentError("jinja: line 1: empty separator"));
  EXPECT_EQ(RenderError("{{ x|tojson }}"),
            absl::InvalidArgumentError(
                "jinja: line 1: Object of type Undefined is not JSON serializable"));
  EXPECT_EQ(RenderError("{{ {(1, 2): 'a'}|tojson }}"),
            absl::InvalidArgumentError(
                "jinja: line 1: keys must be str, int, float, bool or None, not tuple"));
  EXPECT_EQ(RenderError("{{ {[1]: 2} }}"),
            absl::InvalidArgumentError("jinja: line 1: unhashable type: 'list'"));
  EXPECT_EQ(RenderError("{{ 9223372036854775807 + 1 }}").code(), absl::StatusCode::kInvalidArgument);
}

TEST(JinjaErrors, RaiseExceptionIsFailedPreconditionWithTheMessage) {
  EXPECT_EQ(RenderError("{% if messages|length > 1 %}{{ raise_exception('Only one message "
                        "is supported') }}{% endif %}ok",
                        R"({"messages": [1, 2]})"),
            absl::FailedPreconditionError("Only one message is supported"));
  EXPECT_EQ(RenderError("{{ raise_exception('System first: ' + messages[0]['role']) }}",
                        R"({"messages": [{"role": "user"}]})"),
            absl::FailedPreconditionError("System first: user"));
  EXPECT_EQ(Render("{% if false %}{{ raise_exception('no') }}{% endif %}ok"), "ok");
}

TEST(JinjaErrors, TemplateContextMustBeADict) {
  absl::StatusOr<Template> t = Template::Parse("x");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->Render(Value::Int(1), RenderOptions()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*t->Render(Value(), RenderOptions()), "x");
}

TEST(JinjaLimits, OutputSize) {
  RenderOptions options = FixedClock();
  options.max_output_bytes = 100;
  EXPECT_EQ(RenderError("{% for i in range(50) %}abc{% endfor %}", "{}", options).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(RenderError("{{ 'a' * 1000 }}", "{}", options).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(RenderError("{{ 'a' * 1000000000000 }}").code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(RenderError("{{ [0] * 1000000000000 }}").code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(RenderError("{% set ns = namespace(s='x' * 1000) %}{% for i in range(50) %}"
                        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}")
                .code(),
            absl::StatusCode::kResourceExhausted);
  // A value built outside the output counts too.
  EXPECT_EQ(RenderError("{% set ns = namespace(s='ab') %}{% for i in range(10) %}{% set ns.s = ns.s + ns.s %}"
                        "{% endfor %}{{ ns.s|length }}",
                        "{}", options)
                .code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(JinjaLimits, LoopIterationsRangeAndWork) {
  RenderOptions options = FixedClock();
  options.max_loop_iterations = 10;
  EXPECT_EQ(RenderError("{% for i in range(20) %}{% endfor %}", "{}", options).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(RenderError("{% for i in range(5) %}{% for j in range(5) %}{% endfor %}{% endfor %}", "{}",
                        options)
                .code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(RenderError("{{ range(100001)|length }}"),
            absl::ResourceExhaustedError(
                "jinja: line 1: Range too big. The sandbox blocks ranges larger than MAX_RANGE "
                "(100000)."));
  EXPECT_EQ(Render("{{ range(100000)|length }}"), "100000");
  RenderOptions tight = FixedClock();
  tight.max_work = 1000;
  EXPECT_EQ(RenderError("{% for i in range(1000) %}{{ i + i }}{% endfor %}", "{}", tight).code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(JinjaLimits, RecursionAndNesting) {
  EXPECT_EQ(RenderError("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").code(),
            absl::StatusCode::kResourceExhausted);
  RenderOptions options = FixedClock();
  options.max_call_depth = 3;
  EXPECT_EQ(RenderError("{% macro f(n) %}{{ n }}{% if n %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}",
                        "{}", options)
                .code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(Render("{% macro f(n) %}{{ n }}{% if n %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}"),
            "543210");
  // Deep nesting is refused while parsing, not by exhausting the stack.
  const std::string parens = std::string(5000, '(') + "1" + std::string(5000, ')');
  EXPECT_EQ(Template::Parse("{{ " + parens + " }}").status().code(), absl::StatusCode::kInvalidArgument);
  std::string nots = "{{ ";
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_EQ(Template::Parse(nots + "1 }}").status().code(), absl::StatusCode::kInvalidArgument);
  std::string elses = "{{ 1";
  for (int i = 0; i < 5000; ++i) elses += " if 0 else 1";
  EXPECT_EQ(Template::Parse(elses + " }}").status().code(), absl::StatusCode::kInvalidArgument);
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  EXPECT_EQ(Template::Parse(ifs).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Template::Parse("{{ " + std::string(50, '(') + "1" + std::string(50, ')') + " }}").ok());
  // Values that nest without bound are refused too, however they are built.
  EXPECT_EQ(RenderError("{% set ns = namespace(x=[1]) %}{% for i in range(1000) %}"
                        "{% set ns.x = ns.x|batch(1)|list %}{% endfor %}")
                .code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(RenderError("{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}"
                        "{% endfor %}")
                .code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(JinjaLimits, TemplateSize) {
  EXPECT_EQ(Template::Parse(std::string(kMaxTemplateBytes + 1, 'x')).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(JinjaLimits, NamespacesHoldingThemselvesDoNotHangOrLeak) {
  // Python prints [...] for such cycles; kiln stops at its repr depth.
  const std::string out = Render("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns }}");
  EXPECT_THAT(out, HasSubstr("<Namespace {'self': <Namespace {'self': "));
  EXPECT_THAT(out, HasSubstr("..."));
  EXPECT_EQ(Render("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns.self.self is sameas ns }}"),
            "True");
}

}  // namespace
}  // namespace kiln::models::jinja
