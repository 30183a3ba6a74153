import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { MASK, maskText, secretForms } from '../mask.js';
import { mask } from './mask.js';

describe('maskText', () => {
  it('masks a secret inside a longer string, every time it occurs', () => {
    expect(maskText('curl -H "Authorization: Bearer tok_9f8e" https://api/tok_9f8e', ['tok_9f8e'])).toBe(
      'curl -H "Authorization: Bearer ***" https://api/***',
    );
    expect(MASK).toBe('***');
  });

  it('masks a secret that contains another whole, whatever order they come in', () => {
    for (const secrets of [
      ['pass', 'password123'],
      ['password123', 'pass'],
    ]) {
      expect(maskText('login password123 and pass', secrets)).toBe('login *** and ***');
    }
  });

  it('leaves no fragment of overlapping or adjacent secrets', () => {
    expect(maskText('xabcdx', ['abc', 'bcd'])).toBe('x***x');
    expect(maskText('xaaax', ['aa'])).toBe('x***x');
    expect(maskText('[onetwo]', ['one', 'two'])).toBe('[***]');
    expect(maskText('one two', ['one', 'two'])).toBe('*** ***');
  });

  it('ignores empty secrets and leaves text without secrets unchanged', () => {
    expect(maskText('nothing here', ['', 'absent'])).toBe('nothing here');
    expect(maskText('', ['x'])).toBe('');
    expect(maskText('abc', [])).toBe('abc');
  });

  it('takes any iterable of secrets', () => {
    expect(maskText('k1 and k2', new Set(['k1', 'k2']))).toBe('*** and ***');
  });
});

describe('mask', () => {
  it('masks strings and keys in nested objects and arrays, in a copy', () => {
    const input = {
      url: 'https://api.example.com/?key=s3cr3t',
      headers: [{ name: 'x-token', value: 's3cr3t' }, 'Bearer s3cr3t'],
      s3cr3t: { nested: { deeper: ['ok', 's3cr3t!', 42, true, null] } },
      count: 7,
    };
    const snapshot = structuredClone(input);
    expect(mask(input, ['s3cr3t'])).toEqual({
      url: 'https://api.example.com/?key=***',
      headers: [{ name: 'x-token', value: '***' }, 'Bearer ***'],
      '***': { nested: { deeper: ['ok', '***!', 42, true, null] } },
      count: 7,
    });
    expect(input).toEqual(snapshot);
    expect(JSON.stringify(mask(input, ['s3cr3t']))).not.toContain('s3cr3t');
  });

  it('returns new arrays and objects, not the originals', () => {
    const inner = { a: 'x' };
    const input = { inner, list: [inner] };
    const out = mask(input, ['nothing']);
    expect(out).toEqual(input);
    expect(out.inner).not.toBe(inner);
    expect(out.list).not.toBe(input.list);
  });

  it('masks overlapping secrets in values and keys alike', () => {
    expect(mask({ abcd: ['abcd', 'xbcdx'] }, ['abc', 'bcd'])).toEqual({ '***': ['***', 'x***x'] });
  });

  it('masks a plain string and leaves other primitives alone', () => {
    expect(mask('key=s3cr3t', ['s3cr3t'])).toBe('key=***');
    expect(mask(12, ['12'])).toBe(12);
    expect(mask(undefined, ['x'])).toBeUndefined();
    expect(mask(null, ['x'])).toBeNull();
  });

  it("masks an error's message, stack, cause and own fields, keeping its class", () => {
    const error = new ValidationError('headers.authorization', 'token s3cr3t is expired');
    (error as Error).cause = new Error('upstream said s3cr3t');
    const out = mask(error, ['s3cr3t']);
    expect(out).toBeInstanceOf(ValidationError);
    expect(out.message).toBe('headers.authorization: token *** is expired');
    expect(out.stack).toContain('token *** is expired');
    expect(out.stack).not.toContain('s3cr3t');
    expect((out.cause as Error).message).toBe('upstream said ***');
    expect(out.path).toBe('headers.authorization');
    expect(error.message).toContain('s3cr3t');
  });

  it('masks Map, Set, objects with toJSON, and keeps a __proto__ key a plain key', () => {
    const out = mask(
      {
        map: new Map([['s3cr3t', 'v=s3cr3t']]),
        set: new Set(['s3cr3t']),
        url: new URL('https://api.example.com/?key=s3cr3t'),
        when: new Date(5),
        parsed: JSON.parse('{"__proto__": "s3cr3t"}') as unknown,
      },
      ['s3cr3t'],
    );
    expect(out.map).toEqual(new Map([['***', 'v=***']]));
    expect(out.set).toEqual(new Set(['***']));
    expect(out.url).toBe('https://api.example.com/?key=***');
    expect(out.when).toEqual(new Date(5));
    expect(Object.getPrototypeOf(out.parsed)).toBe(Object.prototype);
    expect(Object.entries(out.parsed as object)).toEqual([['__proto__', '***']]);
  });

  it('copies a cyclic structure without looping', () => {
    const node: { name: string; self?: unknown } = { name: 'has s3cr3t' };
    node.self = node;
    const out = mask(node, ['s3cr3t']);
    expect(out.name).toBe('has ***');
    expect(out.self).toBe(out);
  });
});

describe('secretForms and masking of encoded secrets', () => {
  const secrets = ['pa ss"wörd\\x', "it's <b>&co", 'plain-token-123', 'ünï cødé ✓'];

  it.each(secrets)(
    'masks %j plain, JSON-escaped, percent-encoded, form-encoded, HTML-escaped and in base64',
    (secret) => {
      const texts = [
        `x ${secret} y`,
        JSON.stringify({ echoed: secret }),
        JSON.stringify({ echoed: secret }).replace(
          /[\u007f-\uffff]/g,
          (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
        ),
        `https://api.example.com/v1?key=${encodeURIComponent(secret)}&x=1`,
        `https://api.example.com/v1?${new URLSearchParams({ key: secret })}`,
        new URL(
          `https://api.example.com/p/${secret.replaceAll('?', '').replaceAll('#', '')}?q=${secret.replaceAll('#', '')}`,
        ).href,
        `<p>${secret.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!)}</p>`,
        ...['', 'u', 'us', 'usr:'].map((prefix) => `Basic ${Buffer.from(`${prefix}${secret}`).toString('base64')}`),
        ...['', 'u', 'us'].map((prefix) => Buffer.from(`${prefix}${secret}!tail`).toString('base64url')),
      ];
      for (const text of texts) {
        const out = maskText(text, [secret]);
        expect(out, text).toContain(MASK);
        for (const form of secretForms(secret)) expect(out, `${text} → ${form}`).not.toContain(form);
      }
    },
  );

  it('masks what base64 of a longer text gives away of the secret, and keeps the rest', () => {
    const out = maskText(`Basic ${Buffer.from('alice:correct horse battery').toString('base64')}`, [
      'correct horse battery',
    ]);
    expect(out).toMatch(/^Basic YWxp.*\*\*\*/);
    expect(out.length).toBeLessThan(20);
  });

  it('does not mask short encoded forms on their own', () => {
    expect(secretForms('"')).not.toContain('\\"');
    expect(secretForms('"')).not.toContain('%22');
    expect(maskText('say \\"hi\\"', ['x"'])).toBe('say \\"hi\\"');
  });
});

describe('masking what a URL parser makes of a secret', () => {
  it('masks a secret that a URL cut into a lower-cased host and a percent-encoded path (issue 49)', () => {
    const secret = 'sk_live_Q7x+9f/8e="7d c6';
    for (const hidden of [secret, secret.toUpperCase()]) {
      const url = new URL(`http://${hidden}.invalid/x`);
      expect(url.hostname).toBe('sk_live_q7x+9f');
      expect(maskText(`GET ${url.href} failed: cannot resolve ${url.hostname}`, [hidden])).toBe(
        'GET http://***/***.invalid/x failed: cannot resolve ***',
      );
    }
  });

  it('masks a host the parser percent-decoded, put in punycode, or stripped of tabs and newlines', () => {
    for (const secret of ['Ünïcødé-Tøken', 'tok%65n-value', 'tok\ten\nvalue']) {
      const url = new URL(`https://${secret}/x`);
      expect(maskText(`to ${url.hostname}: ${url.href}`, [secret]), secret).toBe('to ***: https://***/x');
    }
  });

  it('masks each piece of a secret that is a whole URL, and not its scheme', () => {
    const secret = 'https://Hooks.Example.com/services/T000/B000/XXXXXXXX';
    expect(maskText(`POST ${new URL(secret).href} failed`, [secret])).toBe('POST https://***/***/***/***/*** failed');
    expect(maskText('https and http are no secret', [secret])).toBe('https and http are no secret');
  });

  it('masks no piece shorter than 4 characters on its own, and does not cut at the : of user:password', () => {
    expect(maskText('a/b and ab/cd in text', ['ab/cd/abcdef'])).toBe('a/b and ab/cd in text');
    expect(maskText('admin approved', ['admin:password123'])).toBe('admin approved');
    expect(maskText(new URL('https://Host.Example.com:443/').href, ['Host.Example.com:443'])).toBe('https://***/');
  });
});
