import { describe, expect, it } from 'vitest';
import { RunledgerError } from '../../errors.js';
import { FILTERS } from './filters.js';
import { InterpolationError, parseTemplate, stepReferences, templateProblems } from './parse.js';
import { render, type Scope } from './render.js';

const makeTrigger = () => ({
  ...{
    name: '  Ada Lovelace ',
    email: 'ada@example.com',
    count: ' 42 ',
    'first name': 'Ada',
    empty: '',
    nothing: null,
    zero: 0,
    yes: true,
    no: false,
  },
  ...{
    tags: ['a', 'b', 'c'],
    none: [],
    items: [{ name: 'first' }, { name: 'second' }],
    nested: { deep: { value: true } },
    obj: { a: 1, b: [2] },
  },
});
const steps = {
  step_1: { output: { body: { items: [10, 20, 30] }, status: 200 } },
  'fetch-user': { output: { id: 'u1' } },
};
const makeScope = (trigger: unknown): Scope => ({
  trigger,
  steps,
  secrets: { token: 's3cret' },
  execution: { id: 'ex_1' },
  workflow: { id: 'wf_1' },
});
const scope = makeScope(makeTrigger());

function thrown(run: () => unknown): InterpolationError {
  try {
    run();
  } catch (error) {
    if (error instanceof InterpolationError) return error;
    throw error;
  }
  throw new Error('no InterpolationError was thrown');
}
const renderError = (template: unknown, within = scope) => thrown(() => render(template, within));

describe('parseTemplate', () => {
  const expr = (source: string, path: (string | number)[], ...filters: [string, ...(string | number)[]][]) => ({
    source,
    root: source.split(/\W/)[0],
    path,
    filters: filters.map(([name, ...args]) => ({ name, args })),
  });
  it.each([
    ['plain text', ['plain text']],
    ['', []],
    ['a }} b', ['a }} b']],
    ['a {{trigger.x}} b', ['a ', expr('trigger.x', ['x']), ' b']],
    [
      '{{ steps.s1.output.items[2] | default(0) | json }}',
      [expr('steps.s1.output.items[2] | default(0) | json', ['s1', 'output', 'items', 2], ['default', 0], ['json'])],
    ],
    [
      `{{trigger["first name"]|join( ', ' )}}`,
      [expr(`trigger["first name"]|join( ', ' )`, ['first name'], ['join', ', '])],
    ],
    [`{{trigger | default("}} \\" '")}}!`, [expr(`trigger | default("}} \\" '")`, [], ['default', `}} " '`]), '!']],
    ['{{execution.id}}{{workflow.id}}', [expr('execution.id', ['id']), expr('workflow.id', ['id'])]],
  ])('parses %j', (template, parts) => {
    expect(parseTemplate(template)).toEqual(parts);
  });

  it.each([
    ['{{7*7}}', "unexpected '7' at column 1"],
    ['Hi {{ trigger.name', "'{{' is not closed by '}}'"],
    ['{{trigger}} and {{', "'{{' is not closed by '}}'"],
    ["{{trigger | default('x}}", "'{{' is not closed by '}}'"],
    ['{{ }}', 'the expression is empty'],
    ['{{trigger.}}', 'unexpected end of expression'],
    ['{{trigger . a}}', "unexpected '.' at column 9"],
    ['{{trigger.a b}}', "unexpected 'b' at column 11"],
    ['{{trigger[x]}}', "unexpected 'x' at column 9"],
    ['{{trigger[0}}', 'unexpected end of expression'],
    ['{{trigger[-1]}}', "unexpected '-' at column 9"],
    ['{{trigger | upper(}}', 'unexpected end of expression'],
    ["{{trigger | default('a' 'b')}}", "unexpected ''' at column 23"],
    ['{{trigger | default(x)}}', "unexpected 'x' at column 19"],
    ['{{trigger | shout}}', "unknown filter 'shout'"],
    ['{{trigger | constructor}}', "unknown filter 'constructor'"],
    ['{{trigger | upper(1)}}', "filter 'upper' takes 0 argument(s), got 1"],
    ['{{trigger | default}}', "filter 'default' takes 1 argument(s), got 0"],
    ['{{trigger | join(",", "-")}}', `filter 'join' takes 0 to 1 argument(s), got 2`],
    ['{{process.env.HOME}}', "unknown root 'process' (use trigger, steps, secrets, execution or workflow)"],
    ['{{trigger.__proto__.x}}', "'__proto__' is not allowed in a path"],
    ['{{trigger["constructor"]}}', `'constructor' is not allowed in a path`],
    ['{{steps.a.output.prototype}}', "'prototype' is not allowed in a path"],
  ])('rejects %j, when parsed and when rendered: %s', (template, why) => {
    const error = thrown(() => parseTemplate(template));
    expect(template).toContain(error.expression);
    expect(error.message).toBe(`{{${error.expression}}}: ${why}`);
    expect(renderError({ deep: [template] }).message).toBe(error.message);
  });
});

describe('render', () => {
  it.each([
    // The whole string is one expression: the value keeps its type.
    ['{{trigger.email}}', 'ada@example.com'],
    ['{{trigger.items[1].name}}', 'second'],
    ['{{steps.step_1.output.body.items[2]}}', 30],
    ['{{trigger["first name"]}}', 'Ada'],
    ["{{steps['fetch-user'].output.id}}", 'u1'],
    ['{{steps.fetch-user.output.id}}', 'u1'],
    ['{{secrets.token}}', 's3cret'],
    ['{{trigger.nested.deep.value}}', true],
    ['{{trigger.items}}', [{ name: 'first' }, { name: 'second' }]],
    ['  {{ trigger.obj }}\n', { a: 1, b: [2] }],
    ['{{steps.step_1.output.status}}', 200],
    ['{{trigger.no}}', false],
    ['{{trigger.nothing}}', null],
    ['{{trigger.zero}}', 0],
    // Inside text, values are stringified.
    ['n={{trigger.zero}}', 'n=0'],
    ['{{trigger.yes}}/{{trigger.no}}', 'true/false'],
    ['{{execution.id}}{{ workflow.id }}', 'ex_1wf_1'],
    ['x={{trigger.nothing}}.', 'x=.'],
    ['o={{trigger.obj}}', 'o={"a":1,"b":[2]}'],
    ['a={{trigger.tags}}', 'a=["a","b","c"]'],
    ['Hi {{trigger.name|trim}}!', 'Hi Ada Lovelace!'],
  ])('%j gives %j', (template, expected) => {
    expect(render(template, scope)).toStrictEqual(expected);
  });

  it('renders every string of a config deeply, leaving keys, other scalars and the input alone', () => {
    const config = {
      '{{trigger.email}}': [1, true, null, { to: '{{trigger.email}}', ids: ['{{steps.step_1.output.body.items}}'] }],
      plain: 'no {braces}',
    };
    const copy = structuredClone(config);
    expect(render(config, scope)).toEqual({
      '{{trigger.email}}': [1, true, null, { to: 'ada@example.com', ids: [[10, 20, 30]] }],
      plain: 'no {braces}',
    });
    expect(config).toEqual(copy);
  });

  it('returns a copy of an object value, not the scope itself', () => {
    const trigger = makeTrigger();
    (render('{{trigger.items}}', makeScope(trigger)) as { name: string }[])[0]!.name = 'changed';
    expect(trigger.items[0]!.name).toBe('first');
  });

  it('keeps a __proto__ key of a parsed config as a plain key', () => {
    const rendered = render(JSON.parse('{"__proto__": {"polluted": "{{trigger.email}}"}}'), scope) as object;
    expect(Object.getPrototypeOf(rendered)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(rendered, '__proto__')?.value).toEqual({ polluted: 'ada@example.com' });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('filters', () => {
  const rows: [string, unknown][] = [
    ['{{trigger.email | upper}}', 'ADA@EXAMPLE.COM'],
    ['{{trigger.name | trim | lower}}', 'ada lovelace'],
    ['[{{trigger.name | trim}}]', '[Ada Lovelace]'],
    ['{{trigger.missing | default("x")}}', 'x'],
    ["{{trigger.a.b.c | default('d')}}", 'd'],
    ['{{steps.later.output.id | default(0)}}', 0],
    ['{{trigger.missing | default(-1.5)}}', -1.5],
    ['{{trigger.nothing | default("null")}}', 'null'],
    ['{{trigger.empty | default("empty")}}', 'empty'],
    ['{{trigger.zero | default(5)}}', 0],
    ['{{trigger.no | default(5)}}', false],
    ['{{trigger.obj | json}}', '{"a":1,"b":[2]}'],
    ['{{trigger.email | json}}', '"ada@example.com"'],
    ['{{trigger.tags | json(1)}}', '[\n "a",\n "b",\n "c"\n]'],
    ['{{trigger.name | length}}', 15],
    ['{{trigger.tags | length}}', 3],
    ['{{trigger.obj | length}}', 2],
    ['{{trigger.missing | default("a") | upper}}', 'A'],
    ['{{trigger.tags | first}}{{trigger.email | first}}', 'aa'],
    ['{{trigger.none | first}}', null],
    ['{{trigger.empty | first}}', ''],
    ['{{trigger.tags | last}}{{trigger.email | last}}', 'cm'],
    ['{{trigger.items | last}}', { name: 'second' }],
    ['{{trigger.none | last | default("none")}}', 'none'],
    ['{{trigger.tags | join(", ")}}', 'a, b, c'],
    ['{{trigger.tags | join}}', 'a,b,c'],
    ['{{trigger.items | join(" | ")}}', '{"name":"first"} | {"name":"second"}'],
    ['{{trigger.count | number}}', 42],
    ['{{trigger.yes | number}}', 1],
    ['{{trigger.zero | number}}', 0],
    ['{{trigger.tags | join("-") | upper | length}}', 5],
    ['{{trigger.zero | string}}', '0'],
    ['{{trigger.nothing | string}}', ''],
    ['{{trigger.obj | string}}', '{"a":1,"b":[2]}'],
  ];
  it.each(rows)('%j gives %j', (template, expected) => {
    expect(render(template, scope)).toStrictEqual(expected);
  });

  it('each have a row above', () => {
    const used = rows.flatMap(([template]) =>
      parseTemplate(template).flatMap((part) => (typeof part === 'string' ? [] : part.filters)),
    );
    expect(new Set(used.map((filter) => filter.name))).toEqual(new Set(Object.keys(FILTERS)));
  });

  it.each([
    ['{{trigger.email | number}}', 'number expects a number or a numeric string, got a string'],
    ['{{trigger.nothing | number}}', 'got null'],
    ['{{trigger.empty | number}}', 'got a string that is not a finite number'],
    ['{{trigger.tags | number}}', 'got an array'],
    ['{{trigger.obj | join}}', 'join expects an array, got an object'],
    ['{{trigger.zero | upper}}', '{{trigger.zero | upper}}: upper expects a string, got a number'],
    ['{{trigger.obj | lower}}', 'lower expects a string, got an object'],
    ['{{trigger.nothing | trim}}', 'trim expects a string, got null'],
    ['{{trigger.zero | length}}', 'length expects a string, an array or an object, got a number'],
    ['{{trigger.obj | first}}', 'first expects an array or a string, got an object'],
    ['{{trigger.yes | last}}', 'last expects an array or a string, got a boolean'],
    ['{{secrets.token | number}}', 'got a string that is not a finite number'],
  ])('%j fails: %s (naming the type only: a value may be a secret)', (template, message) => {
    expect(renderError(template).message).toContain(message);
    expect(renderError(template).message).not.toMatch(/s3cret|ada@|Ada|\[/);
  });
});

describe('render: missing values', () => {
  it('names the expression and the undefined path', () => {
    const error = renderError({ to: 'Dear {{ trigger.nme }}' });
    expect(error).toBeInstanceOf(RunledgerError);
    expect([error.name, error.code, error.expression]).toEqual(['InterpolationError', 'interpolation', 'trigger.nme']);
    expect(String(error)).toBe('InterpolationError: {{trigger.nme}}: trigger.nme is not defined');
  });

  it.each([
    ['{{trigger.a.b.c}}', 'trigger.a'],
    ['x {{steps.later.output.id}}', 'steps.later'],
    ['{{trigger.items[5].name}}', 'trigger.items[5]'],
    ['{{trigger["last name"]}}', 'trigger["last name"]'],
    ['{{trigger.email.length}}', 'trigger.email.length'],
    ['{{trigger.missing | upper}}', 'trigger.missing'],
    ['{{trigger.tags.length | default(1)}}x{{trigger.missing}}', 'trigger.missing'],
    ['{{trigger.missing | upper | default("x")}}', 'trigger.missing'],
  ])('%j: %s is not defined', (template, path) => {
    expect(renderError(template).message).toMatch(
      new RegExp(`^\\{\\{.*\\}\\}: ${path.replace(/[[\]."]/g, '\\$&')} is not defined$`),
    );
  });

  it('treats an undefined root or value as not defined', () => {
    expect(renderError('{{trigger}}', { ...scope, trigger: undefined }).message).toBe(
      '{{trigger}}: trigger is not defined',
    );
    expect(renderError('{{trigger.u}}', makeScope({ u: undefined })).message).toBe(
      '{{trigger.u}}: trigger.u is not defined',
    );
  });
});

describe('render: injection attempts', () => {
  const marker = '__runledgerTemplatePwned';
  it.each([
    ['{{7*7}}', 'unexpected'],
    [`{{constructor.constructor('globalThis.${marker} = 1')()}}`, "unknown root 'constructor'"],
    ['{{globalThis}}', "unknown root 'globalThis'"],
    [`{{trigger.constructor.constructor("globalThis.${marker} = 1")()}}`, "'constructor' is not allowed"],
    ['{{trigger.email; process.exit(1)}}', "unexpected ';'"],
    ['{{trigger.__proto__.x}}', "'__proto__' is not allowed"],
    ['{{trigger["__proto__"]}}', "'__proto__' is not allowed"],
    ['{{process.env.HOME}}', "unknown root 'process'"],
    ['{{trigger.toString}}', 'trigger.toString is not defined'],
    ['{{secrets.hasOwnProperty}}', 'is not defined'],
    ['{{trigger.tags.map}}', 'is not defined'],
  ])('%j is rejected, never run', (template, message) => {
    const error = renderError(template, makeScope(JSON.parse('{"__proto__": {"x": "own"}, "tags": []}')));
    expect(error.message).toContain(message);
    expect(marker in globalThis).toBe(false);
  });
});

describe('templateProblems', () => {
  it('reports every bad expression with the JSON path of its string', () => {
    const headers = { Authorization: 'Bearer {{secrets.token | shout}}', 'Content-Type': '{{7*7}}' };
    const body = ['{{trigger.not.yet.known}}', { 'x y': '{{trigger.__proto__}} and {{process.env}}' }];
    const config = { url: 'https://api.test/{{trigger.id | upper.anything}}', headers, body, retries: 3 };
    expect(templateProblems(config, 'steps[1].config')).toEqual([
      { path: 'steps[1].config.url', message: "{{trigger.id | upper.anything}}: unexpected '.' at column 19" },
      { path: 'steps[1].config.headers.Authorization', message: "{{secrets.token | shout}}: unknown filter 'shout'" },
      { path: 'steps[1].config.headers.Content-Type', message: "{{7*7}}: unexpected '7' at column 1" },
      {
        path: 'steps[1].config.body[1]["x y"]',
        message: "{{trigger.__proto__}}: '__proto__' is not allowed in a path",
      },
      {
        path: 'steps[1].config.body[1]["x y"]',
        message: "{{process.env}}: unknown root 'process' (use trigger, steps, secrets, execution or workflow)",
      },
    ]);
  });

  it.each([
    [{ a: '{{trigger | upper(1)}}' }, '', 'a'],
    ['{{trigger | default}}', 'config.url', 'config.url'],
    [['x', ['{{ steps.a.output']], 'list', 'list[1][0]'],
  ])('builds the path of %j from %j', (value, base, path) => {
    expect(templateProblems(value, base).map((problem) => problem.path)).toEqual([path]);
  });

  it('is empty for a good config; missing data is a render-time question', () => {
    expect(
      templateProblems(
        { a: '{{trigger.anything | default("x")}} {{steps.b.output.c[0]}}', b: [1, null, '}} {'] },
        'config',
      ),
    ).toEqual([]);
  });
});

describe('stepReferences', () => {
  it('lists each referenced step id once, in order of first use', () => {
    const config = [
      '{{steps.one.output}} {{steps.two.output.x | default(1)}}',
      { b: ['{{steps.one.output.y}}', '{{steps["three 3"].output}}'] },
    ];
    expect(stepReferences([...config, '{{trigger.steps.four}} {{steps}} {{steps[0]}}'])).toEqual([
      'one',
      'two',
      'three 3',
    ]);
  });

  it('skips templates with errors and is empty without references', () => {
    expect(stepReferences({ a: '{{steps.bad | nope}} {{steps.four.output', b: '{{trigger.x}}', c: 3 })).toEqual([]);
  });
});

describe('render: secret-derived strings', () => {
  const secretScope: Scope = { ...scope, secrets: { token: 'Tok "en\\ wört', pair: 'user:pw', tiny: 'ab' } };
  const derivedOf = (template: unknown): { value: unknown; derived: string[] } => {
    const derived = new Set<string>();
    const value = render(template, secretScope, derived);
    return { value, derived: [...derived].sort() };
  };

  it.each([
    ['{{secrets.token | upper}}', ['TOK "EN\\ WÖRT']],
    ['{{secrets.token | lower}}', ['tok "en\\ wört']],
    ['{{secrets.token | json}}', ['"Tok \\"en\\\\ wört"']],
    ['{{secrets.token | trim | string}}', ['Tok "en\\ wört']],
    ['{{secrets.missing | default("fallback-value")}}', ['fallback-value']],
    ['Bearer {{secrets.token | lower}}!', ['tok "en\\ wört']],
    ['{{secrets.pair}}|{{trigger.email}}', ['user:pw']],
  ])('%s is secret', (template, expected) => {
    expect(derivedOf({ h: template }).derived).toEqual(expected);
  });

  it('tracks the strings of an object it produces, and its JSON inside text; not the secret names', () => {
    const { derived } = derivedOf({ all: '{{secrets}}', text: 'x {{secrets}}' });
    expect(derived).toContain('Tok "en\\ wört');
    expect(derived).toContain(JSON.stringify(secretScope.secrets));
    expect(derived).not.toContain('token');
  });

  it('does not track numbers, short strings, or values that do not come from a secret', () => {
    expect(derivedOf('{{secrets.token | length}} {{secrets.token | first}} {{secrets.tiny}}').derived).toEqual([]);
    expect(derivedOf({ a: '{{trigger.email | upper}}', b: '{{steps.step_1.output.status}}' }).derived).toEqual([]);
  });

  it('renders exactly as without tracking', () => {
    const template = { a: 'Bearer {{secrets.token | upper}}', b: ['{{secrets.pair}}'], c: '{{trigger.tags}}' };
    expect(derivedOf(template).value).toEqual(render(template, secretScope));
  });
});
