import type { z } from 'zod';
import type { Actor } from './auth/actor.js';

export interface RouteRequest<B, Q> {
  params: Record<string, string>;
  query: Q;
  body: B;
  headers: Headers;
  signal: AbortSignal;
  /** Who made the request (its API key); undefined in open mode, where no auth is configured. */
  actor?: Actor;
}

/**
 * One endpoint, declared once: the app routes and validates with it and the OpenAPI document is
 * generated from it. `handle` returns the JSON body (sent with `status`) or a `Response`.
 */
export interface Route<B = any, Q = any> {
  method: 'get' | 'post' | 'put' | 'delete';
  /** OpenAPI style: `/workflows/{id}`. */
  path: string;
  summary: string;
  tag: string;
  body?: z.ZodType<B>;
  query?: z.ZodType<Q>;
  status: number;
  response?: z.ZodType;
  /** Other statuses this route answers with, for the document. */
  errors?: number[];
  handle(request: RouteRequest<B, Q>): Promise<unknown>;
}

export function route<B = undefined, Q = Record<string, string>>(r: Route<B, Q>): Route<B, Q> {
  return r;
}
