import { describe, expect, it } from 'vitest';
import { TerminalError, ValidationError } from './errors.js';
import { checkPublicUrl, handedOutBase, publicUrlFor } from './public-url.js';

describe('the public URL callbacks are handed out under', () => {
  it('keeps a path prefix and drops the trailing slash, so paths join with one', () => {
    expect(checkPublicUrl('https://x.example/runledger/')).toBe('https://x.example/runledger');
    expect(checkPublicUrl('http://10.0.0.5:8080')).toBe('http://10.0.0.5:8080');
    expect(publicUrlFor(checkPublicUrl('https://x.example/runledger/'), '/callbacks/ex_1.s.mac', 'step s')).toBe(
      'https://x.example/runledger/callbacks/ex_1.s.mac',
    );
  });

  it('refuses what no service could call back, naming RUNLEDGER_PUBLIC_URL', () => {
    const refused = (value: string) => {
      try {
        checkPublicUrl(value);
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).path).toBe('RUNLEDGER_PUBLIC_URL');
        return (error as Error).message;
      }
      throw new Error(`${value} was accepted`);
    };
    expect(refused('/runledger')).toMatch(/^RUNLEDGER_PUBLIC_URL: must be an absolute http\(s\) URL/);
    expect(refused('runledger.example.com')).toMatch(/absolute/);
    expect(refused('ftp://x.example')).toMatch(/http or https/);
    expect(refused('https://x.example/?a=1')).toMatch(/no query/);
    expect(refused('https://x.example/?')).toMatch(/no query/);
    expect(refused('https://x.example/#top')).toMatch(/no fragment/);
    expect(refused('https://user:pw@x.example')).toMatch(/credentials/);
    expect(refused('http://0.0.0.0:8080')).toMatch(/wildcard/);
    expect(refused('http://[::]:8080')).toMatch(/wildcard/);
    expect(() => checkPublicUrl('nope', '--public-url')).toThrow(/^--public-url: /);
  });

  it('prefers the public URL; a server listening on loopback or a specific host uses its own; a wildcard address or a worker has none', () => {
    expect(handedOutBase({ publicUrl: 'https://lb.example/api/', listeningUrl: 'http://127.0.0.1:8080' })).toBe(
      'https://lb.example/api',
    );
    expect(handedOutBase({ listeningUrl: 'http://127.0.0.1:8080' })).toBe('http://127.0.0.1:8080');
    expect(handedOutBase({ listeningUrl: 'http://[::1]:8080' })).toBe('http://[::1]:8080');
    expect(handedOutBase({ listeningUrl: 'http://10.0.0.5:8080' })).toBe('http://10.0.0.5:8080');
    expect(handedOutBase({ listeningUrl: 'http://0.0.0.0:8080' })).toBeUndefined();
    expect(handedOutBase({ listeningUrl: 'http://[::]:8080' })).toBeUndefined();
    expect(handedOutBase({})).toBeUndefined();
    expect(() => handedOutBase({ publicUrl: 'x.example', listeningUrl: 'http://127.0.0.1:8080' })).toThrow(
      /RUNLEDGER_PUBLIC_URL/,
    );
  });

  it('without a base, fails for good naming the setting instead of handing out a relative URL', () => {
    expect(() => publicUrlFor(undefined, '/callbacks/t', 'wait_for_callback step s')).toThrow(TerminalError);
    expect(() => publicUrlFor('', '/callbacks/t', 'wait_for_callback step s')).toThrow(
      /^wait_for_callback step s needs a URL .*set RUNLEDGER_PUBLIC_URL/,
    );
  });
});
