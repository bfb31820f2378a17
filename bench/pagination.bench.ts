/**
 * Pagination figures: validator throughput on a typical query against an equivalent zod 4 schema
 * (same rules: one string, `^[0-9]+$`, range, defaults), and signed cursor encode / decode rates.
 */

import { createCursorCodec, cursorValidator, pageNumberValidator } from 'api-conventions';
import { z } from 'zod';
import { rate } from './support.js';

const decimal = (min: number, max: number) =>
  z
    .string()
    .regex(/^[0-9]+$/)
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const pageNumberSchema = z.object({
  pageNumber: decimal(1, Number.MAX_SAFE_INTEGER).default(1),
  pageSize: decimal(1, 200).default(20),
});
const cursorSchema = z.object({
  cursor: z.string().min(1).max(4096).optional(),
  limit: decimal(1, 500).default(50),
});

// What Express (qs) hands over for typical list requests.
const pageQueries = [
  { pageNumber: '3', pageSize: '50', status: 'confirmed' },
  { pageNumber: '1', pageSize: '200' },
  { pageSize: '20', propertyId: 'BER' },
  { pageNumber: '12' },
];
const cursorQueries = [
  { limit: '500', cursor: 'eyJ2IjoxLCJzIjp7ImFmdGVyIjoxMjN9fQ.abc', type: 'audit' },
  { limit: '50' },
  { cursor: 'eyJ2IjoxLCJzIjp7ImFmdGVyIjo5fX0.def' },
  { limit: '100', type: 'usage' },
];
const refusedQueries = [
  { pageNumber: '1', pageSize: '500' },
  { pageSize: '12abc' },
  { pageNumber: ['1', '2'] },
  { pageNumber: '0' },
];

export async function run(): Promise<Record<string, unknown>> {
  const validatePage = pageNumberValidator();
  const validateCursor = cursorValidator();
  // The two must agree before their speed is compared.
  for (const q of [...pageQueries, ...refusedQueries]) {
    if (validatePage(q).ok !== pageNumberSchema.safeParse(q).success)
      throw new Error(`disagree on ${JSON.stringify(q)}`);
  }

  const page = rate(pageQueries, validatePage);
  const pageZod = rate(pageQueries, (q) => pageNumberSchema.safeParse(q));
  const cursor = rate(cursorQueries, validateCursor);
  const cursorZod = rate(cursorQueries, (q) => cursorSchema.safeParse(q));
  const refused = rate(refusedQueries, validatePage);
  const refusedZod = rate(refusedQueries, (q) => pageNumberSchema.safeParse(q));
  const rawString = rate(['pageNumber=3&pageSize=50&status=confirmed'], validatePage);

  const codec = createCursorCodec({ signingKey: 'k'.repeat(32) });
  const states = [
    { after: 'log_000123', at: 1_767_225_600_000 },
    { after: 'log_999999', at: 1 },
  ];
  const tokens = states.map((s) => codec.encode(s));
  const encode = rate(states, (s) => codec.encode(s));
  const decode = rate(tokens, (t) => codec.decode(t));
  const boundQuery = { type: 'audit', from: '2026-01-01' };
  const boundTokens = states.map((s) => codec.encode(s, { query: boundQuery }));
  const decodeBound = rate(boundTokens, (t) => codec.decode(t, { query: boundQuery }));
  const validateWithCodec = cursorValidator({ codec });
  const codecQueries = tokens.map((t) => ({ cursor: t, limit: '100' }));
  const cursorWithCodec = rate(codecQueries, validateWithCodec);

  const figures = {
    pageNumberValidatorPerSec: Math.round(page),
    pageNumberZodPerSec: Math.round(pageZod),
    pageNumberRatio: Number((page / pageZod).toFixed(1)),
    cursorValidatorPerSec: Math.round(cursor),
    cursorZodPerSec: Math.round(cursorZod),
    cursorRatio: Number((cursor / cursorZod).toFixed(1)),
    refusedValidatorPerSec: Math.round(refused),
    refusedZodPerSec: Math.round(refusedZod),
    refusedRatio: Number((refused / refusedZod).toFixed(1)),
    rawStringValidatorPerSec: Math.round(rawString),
    cursorEncodePerSec: Math.round(encode),
    cursorDecodePerSec: Math.round(decode),
    cursorDecodeBoundPerSec: Math.round(decodeBound),
    cursorValidatorWithCodecPerSec: Math.round(cursorWithCodec),
  };
  for (const [name, value] of Object.entries(figures))
    console.error(`${name.padEnd(32)} ${value.toLocaleString('en')}`);
  return figures;
}
