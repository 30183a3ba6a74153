import { useEffect, useState } from 'preact/hooks';

/** Every page is a URL under /ui: shareable, reloadable, and the back button works. */
export const BASE = '/ui';

export function href(path: string): string {
  return BASE + path;
}

export function navigate(path: string, replace = false): void {
  const url = path.startsWith(BASE) ? path : href(path);
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  dispatchEvent(new PopStateEvent('popstate'));
}

export interface Location {
  path: string;
  query: URLSearchParams;
}

function current(): Location {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) || '/' : '/';
  return { path, query: new URLSearchParams(location.search) };
}

export function useLocation(): Location {
  const [loc, setLoc] = useState(current);
  useEffect(() => {
    const update = () => setLoc(current());
    addEventListener('popstate', update);
    return () => removeEventListener('popstate', update);
  }, []);
  return loc;
}

/** A click on an internal link moves without a reload (a modified click opens a tab as usual). */
export function onLinkClick(event: MouseEvent): void {
  const a = (event.target as HTMLElement).closest?.('a');
  if (
    !a ||
    event.defaultPrevented ||
    event.button !== 0 ||
    event.metaKey ||
    event.ctrlKey ||
    event.shiftKey ||
    event.altKey
  )
    return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(BASE) || a.target) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
}

/** `/runs/:id` against `/runs/ex_1`: the params, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const p = pattern.split('/');
  const s = path.split('/');
  if (p.length !== s.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    if (p[i]!.startsWith(':')) params[p[i]!.slice(1)] = decodeURIComponent(s[i]!);
    else if (p[i] !== s[i]) return null;
  }
  return params;
}
