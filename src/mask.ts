/**
 * Masking a secret's value in text, in every form it is written (a kernel module: the log masks with it,
 * and workflows/mask.ts builds the deep copy of step values on it).
 */

/** What a secret's value is replaced with wherever it would be written. */
export const MASK = '***';

/**
 * `text` with every occurrence of each secret value replaced by `***`, in each form `secretForms` lists: overlapping
 * or adjacent occurrences become one `***`. Empty secrets are ignored.
 *
 * @example maskText('Bearer s3cr3t', ['s3cr3t']) // 'Bearer ***'
 */
export function maskText(text: string, secrets: Iterable<string>): string {
  return maskNeedles(text, secretNeedles(secrets));
}

/**
 * Encoded forms shorter than this are not masked on their own: `\"` (a secret `"`, JSON-escaped) or a
 * two-character base64 fragment would match text that has nothing to do with the secret. A secret's own
 * value is masked whatever its length.
 */
const MIN_FORM_LENGTH = 4;
/** Base64 fragments are 4 characters from a 3-byte value and match text by chance more easily: 6 at least. */
const MIN_BASE64_LENGTH = 6;

/**
 * `secret` and the forms it takes when software around a step encodes it, so that each is masked
 * too: JSON-escaped (as `JSON.stringify` writes it, and with non-ASCII as `\uXXXX`), percent-encoded
 * (`encodeURIComponent`, lower-case hex too, form encoding with `+` for spaces, and the WHATWG URL
 * parser's path and query encodings, as in an error message quoting a URL), HTML-escaped, and base64
 * (standard and URL-safe) — including inside the base64 of a longer text, such as
 * `Basic base64(user:secret)`: for each of the three byte alignments the secret can start at, the
 * characters determined by its bytes alone. And the pieces a URL parser makes of it (see `urlForms`),
 * so that an error quoting a URL whose host a secret is part of (`url.href`, `url.hostname`) hides it.
 * Forms equal to the secret are left out, and forms too short to be told apart from ordinary text
 * (see MIN_FORM_LENGTH, MIN_BASE64_LENGTH).
 *
 * @example secretForms('a b"c') // ['a b"c', 'a b\\"c', 'a%20b%22c', 'a+b%22c', 'a b&quot;c', 'YSBiImM', …]
 */
export function secretForms(secret: string): string[] {
  const cached = forms.get(secret);
  if (cached) return cached;
  const bytes = Buffer.from(secret, 'utf8');
  const encoded = [
    JSON.stringify(secret).slice(1, -1),
    JSON.stringify(secret)
      .slice(1, -1)
      .replace(/[\u007f-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`),
    encodeURIComponent(secret),
    encodeURIComponent(secret).replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase()),
    new URLSearchParams({ v: secret }).toString().slice(2),
    percentEncode(bytes, PATH_SET),
    percentEncode(bytes, PATH_SET).replaceAll('\\', '/'),
    percentEncode(bytes, QUERY_SET),
    secret.replace(/[&<>"']/g, (ch) => HTML[ch]!),
    secret.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`),
  ].filter((form) => form.length >= MIN_FORM_LENGTH);
  const base64 = [0, 1, 2].flatMap((offset) => {
    const fragment = base64Fragment(bytes, offset);
    return [fragment, fragment.replace(/\+/g, '-').replace(/\//g, '_')];
  });
  const all = [
    secret,
    ...encoded,
    ...urlForms(secret).filter((form) => form.length >= MIN_FORM_LENGTH),
    ...base64.filter((form) => form.length >= MIN_BASE64_LENGTH),
  ];
  const out = [...new Set(all)];
  if (forms.size >= FORMS_CACHE_SIZE) forms.delete(forms.keys().next().value!);
  forms.set(secret, out);
  return out;
}

// A pure function's memo: the same few secrets are masked in every step of every run.
const FORMS_CACHE_SIZE = 1000;
const forms = new Map<string, string[]>();

const HTML: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
// The WHATWG URL standard's percent-encode sets (C0 controls, and bytes over 0x7E, are always encoded).
const PATH_SET = new Set(' "#<>?`{}');
const QUERY_SET = new Set(' "#<>\'');
const USERINFO_SET = new Set([...PATH_SET, ...'/:;=@[\\]^|']);
/**
 * Where the WHATWG URL parser cuts an http(s) URL into host, path, query and fragment. Not at `@` and
 * `:`: `hostForm` reads userinfo and port off a piece as the parser does, and pieces of `user:pass`
 * would mask every `user` in every output.
 */
const URL_DELIMITERS = /[/\\?#]/;

/**
 * What a URL parser makes of `secret` when a template puts it in a URL: it drops tabs and newlines,
 * cuts the URL at `/ \ ? #`, and of each piece lower-cases, percent-decodes and punycodes a host
 * (`SK_Q7/8E` in `http://SK_Q7/8E.x` becomes host `sk_q7`) and percent-encodes a path, query or
 * userinfo. Each piece of MIN_FORM_LENGTH or more is masked in those forms: a piece of a secret is
 * masked like a derived string. The scheme of a secret that is a whole URL is no piece of it.
 */
function urlForms(secret: string): string[] {
  const kept = secret.replace(/[\t\n\r]/g, '');
  const pieces = kept.split(URL_DELIMITERS);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(kept)) pieces.shift();
  const whole = [kept, kept.toLowerCase()];
  return whole.concat(
    pieces.flatMap((piece) => {
      if (piece.length < MIN_FORM_LENGTH) return [];
      const bytes = Buffer.from(piece, 'utf8');
      return [
        piece,
        piece.toLowerCase(),
        hostForm(piece),
        percentEncode(bytes, PATH_SET),
        percentEncode(bytes, QUERY_SET),
        percentEncode(bytes, USERINFO_SET),
      ];
    }),
  );
}

/** `piece` as the host of an http URL (lower-cased, percent-decoded, IDNA), or '' when it cannot be one. */
function hostForm(piece: string): string {
  try {
    return new URL(`http://${piece}/`).hostname;
  } catch {
    return '';
  }
}

function percentEncode(bytes: Buffer, set: Set<string>): string {
  let out = '';
  for (const byte of bytes) {
    const ch = String.fromCharCode(byte);
    out += byte < 0x20 || byte > 0x7e || set.has(ch) ? `%${byte.toString(16).toUpperCase().padStart(2, '0')}` : ch;
  }
  return out;
}

/**
 * The base64 characters that `bytes` alone determine when they start `offset` bytes (0–2) into a
 * 3-byte group of a longer text: character i carries bits 6i…6i+5, so it is kept when all of those
 * fall inside the secret's bits.
 */
function base64Fragment(bytes: Buffer, offset: number): string {
  const text = Buffer.concat([Buffer.alloc(offset), bytes])
    .toString('base64')
    .replace(/=+$/, '');
  const first = Math.ceil((8 * offset) / 6);
  const end = Math.floor((8 * (offset + bytes.length)) / 6);
  return end > first ? text.slice(first, end) : '';
}

/** Every form (see `secretForms`) of each non-empty secret: what `maskNeedles` looks for. */
export function secretNeedles(secrets: Iterable<string>): string[] {
  const needles = new Set<string>();
  for (const secret of secrets)
    if (typeof secret === 'string' && secret.length > 0) for (const form of secretForms(secret)) needles.add(form);
  return [...needles];
}

/** `text` with every occurrence of each needle (see `secretNeedles`) hidden: overlapping or adjacent ones become one `***`. */
export function maskNeedles(text: string, needles: string[]): string {
  const ranges: Array<[number, number]> = [];
  for (const needle of needles) {
    // step by one, not by the needle's length: occurrences of one secret may overlap ('aa' in 'aaa')
    for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1))
      ranges.push([at, at + needle.length]);
  }
  if (ranges.length === 0) return text;
  ranges.sort((a, b) => a[0] - b[0]);
  const merged: Array<[number, number]> = [];
  for (const [start, stop] of ranges) {
    const last = merged[merged.length - 1];
    if (last && start <= last[1]) last[1] = Math.max(last[1], stop);
    else merged.push([start, stop]);
  }
  let out = '';
  let from = 0;
  for (const [start, stop] of merged) {
    out += text.slice(from, start) + MASK;
    from = stop;
  }
  return out + text.slice(from);
}
