import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

/** One place a secret was found, in one of its forms. */
export interface Leak {
  /** Which haystack: `sqlite:/tmp/x.db-wal`, `pg_dump`, `logs`, `GET /runs` … */
  where: string;
  /** Index of the secret in the list given. */
  secret: number;
  /** The form that matched: `plain`, `upper`, `lower:json`, `base64@1` … */
  form: string;
  /** A few characters around the hit, with the hit itself replaced by `<LEAK>`. */
  context: string;
}

/** Something to search: a name and its bytes or text. */
export interface Haystack {
  where: string;
  content: string | Buffer;
}

/** Forms shorter than this are not searched: they would match unrelated text (a 1-character `first`). */
export const MIN_FORM_LENGTH = 4;
/** Base64 fragments match by chance more easily (ULIDs share their alphabet): 8 characters at least. */
export const MIN_BASE64_LENGTH = 8;

/**
 * Pieces of a secret shorter than this are not searched alone: `Back` of `\Back\slash` is in every
 * `callback` of a schema. The masker hides pieces from 4 characters; this grep cannot tell them from words.
 */
export const MIN_PIECE_LENGTH = 8;

/**
 * Every form in which `secret` must not appear anywhere: as it is, upper- and lower-cased, and each
 * of those JSON-escaped (as JSON.stringify writes it, and with non-ASCII as `\uXXXX`), percent-encoded
 * (encodeURIComponent, form encoding, the WHATWG URL path and query encodings), HTML-escaped, and in
 * base64 and base64url — including inside the base64 of a longer text (`Basic base64(user:secret)`),
 * for each of the three byte alignments. And the pieces a URL parser cuts it into (at `/ \ ? # @ :`,
 * after dropping tabs and newlines; MIN_PIECE_LENGTH or more), each as it is, upper- and lower-cased,
 * JSON-escaped and percent-encoded, and as the host a URL makes of it (lower-cased, punycode): an error
 * quoting `url.href` shows a secret in a host that way (issue 49). Forms too short to be told apart
 * from other text are left out.
 *
 * @example secretVariants('tok"en').map((v) => v.form) // ['plain', 'plain:json', …, 'upper', …]
 */
export function secretVariants(secret: string): { form: string; text: string }[] {
  const out = new Map<string, string>();
  const add = (form: string, text: string, min = MIN_FORM_LENGTH) => {
    if (text.length >= min && !out.has(text)) out.set(text, form);
  };
  for (const [name, base] of [
    ['plain', secret],
    ['upper', secret.toUpperCase()],
    ['lower', secret.toLowerCase()],
  ] as const) {
    add(name, base);
    const json = JSON.stringify(base).slice(1, -1);
    add(`${name}:json`, json);
    add(
      `${name}:json-ascii`,
      json.replace(/[\u007f-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`),
    );
    add(`${name}:uri`, encodeURIComponent(base));
    add(`${name}:form`, new URLSearchParams({ v: base }).toString().slice(2));
    add(`${name}:url-path`, percentEncode(base, ' "#<>?`{}'));
    add(`${name}:url-query`, percentEncode(base, ' "#<>\''));
    add(
      `${name}:html`,
      base.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!),
    );
    const bytes = Buffer.from(base, 'utf8');
    for (const offset of [0, 1, 2]) {
      const fragment = base64Fragment(bytes, offset);
      add(`${name}:base64@${offset}`, fragment, MIN_BASE64_LENGTH);
      add(`${name}:base64url@${offset}`, fragment.replace(/\+/g, '-').replace(/\//g, '_'), MIN_BASE64_LENGTH);
    }
  }
  const pieces = secret.replace(/[\t\n\r]/g, '').split(/[/\\?#@:]/);
  for (const [index, piece] of pieces.entries()) {
    if (piece.length < MIN_PIECE_LENGTH) continue;
    for (const [name, base] of [
      ['plain', piece],
      ['upper', piece.toUpperCase()],
      ['lower', piece.toLowerCase()],
    ] as const) {
      add(`piece${index}:${name}`, base);
      add(`piece${index}:${name}:json`, JSON.stringify(base).slice(1, -1));
      add(`piece${index}:${name}:uri`, encodeURIComponent(base));
      add(`piece${index}:${name}:url-path`, percentEncode(base, ' "#<>?`{}'));
      add(`piece${index}:${name}:url-query`, percentEncode(base, ' "#<>\''));
    }
    add(`piece${index}:host`, urlHost(piece));
  }
  return [...out].map(([text, form]) => ({ form, text }));
}

/** `piece` as the host of an http URL (lower-cased, percent-decoded, punycode), or '' when it cannot be one. */
function urlHost(piece: string): string {
  try {
    return new URL(`http://${piece}/`).hostname;
  } catch {
    return '';
  }
}

/**
 * Every occurrence of every variant of every secret in the haystacks. Text is searched as UTF-8
 * bytes, so a binary database file or WAL is searched as it is on disk.
 *
 * @example findLeaks([{ where: 'logs', content: output }], ['s3cr3t-value']) // []
 */
export function findLeaks(haystacks: Haystack[], secrets: string[]): Leak[] {
  const leaks: Leak[] = [];
  const needles = secrets.flatMap((secret, index) =>
    secretVariants(secret).map((variant) => ({ ...variant, index, bytes: Buffer.from(variant.text, 'utf8') })),
  );
  for (const haystack of haystacks) {
    const buffer = typeof haystack.content === 'string' ? Buffer.from(haystack.content, 'utf8') : haystack.content;
    for (const needle of needles) {
      for (let at = buffer.indexOf(needle.bytes); at !== -1; at = buffer.indexOf(needle.bytes, at + 1)) {
        const before = buffer.subarray(Math.max(0, at - 40), at).toString('utf8');
        const after = buffer.subarray(at + needle.bytes.length, at + needle.bytes.length + 40).toString('utf8');
        leaks.push({
          where: haystack.where,
          secret: needle.index,
          form: needle.form,
          context: `${before}<LEAK>${after}`.replace(/[^\x20-\x7e\u00a0-\uffff]/g, '.'),
        });
      }
    }
  }
  return leaks;
}

/** Where a running (or stopped) server keeps and shows things. Every field is optional. */
export interface LeakSources {
  /** A SQLite database file: the file, its `-wal` and `-shm` are read as bytes. */
  sqlite?: string;
  /** A PostgreSQL database URL: dumped with `pg_dump` (`pgDump` names the binary, default `pg_dump`). */
  postgres?: string;
  pgDump?: string;
  /** The server's logs (stdout and stderr). */
  logs?: string;
  /** Bodies of API responses and SSE streams, by request. */
  responses?: Haystack[];
}

/**
 * Greps every source for every form of every secret (see `secretVariants`): the SQLite file and its
 * WAL, a `pg_dump` of the PostgreSQL database, the logs, and the responses. Empty when nothing leaked.
 *
 * @example
 * const leaks = grepSecrets({ sqlite: dbPath, logs: served.output(), responses }, planted);
 * expect(leaks).toEqual([]);
 */
export function grepSecrets(sources: LeakSources, secrets: string[]): Leak[] {
  const haystacks: Haystack[] = [];
  if (sources.sqlite !== undefined) {
    for (const suffix of ['', '-wal', '-shm', '-journal']) {
      const path = `${sources.sqlite}${suffix}`;
      if (existsSync(path)) haystacks.push({ where: `sqlite:${path}`, content: readFileSync(path) });
    }
  }
  if (sources.postgres !== undefined) {
    const dump = execFileSync(
      sources.pgDump ?? 'pg_dump',
      ['--no-owner', '--no-privileges', '--dbname', sources.postgres],
      { maxBuffer: 1024 * 1024 * 1024 },
    );
    haystacks.push({ where: 'pg_dump', content: dump });
  }
  if (sources.logs !== undefined) haystacks.push({ where: 'logs', content: sources.logs });
  haystacks.push(...(sources.responses ?? []));
  return findLeaks(haystacks, secrets);
}

/** Percent-encodes C0 controls, bytes over 0x7E and the characters of `set`, as the WHATWG URL parser does. */
function percentEncode(text: string, set: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const ch = String.fromCharCode(byte);
    out += byte < 0x20 || byte > 0x7e || set.includes(ch) ? `%${byte.toString(16).toUpperCase().padStart(2, '0')}` : ch;
  }
  return out;
}

/** The base64 characters that `bytes` alone determine when they start `offset` bytes into a 3-byte group. */
function base64Fragment(bytes: Buffer, offset: number): string {
  const text = Buffer.concat([Buffer.alloc(offset), bytes])
    .toString('base64')
    .replace(/=+$/, '');
  const first = Math.ceil((8 * offset) / 6);
  const end = Math.floor((8 * (offset + bytes.length)) / 6);
  return end > first ? text.slice(first, end) : '';
}
