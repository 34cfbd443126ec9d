/**
 * An event type's `data` schema: a JSON Schema (draft 2020-12) checked with Ajv, a maintained
 * validator, never by hand. Pure: no remote `$ref` is fetched (an unresolved one is a schema
 * problem), and compiled validators are kept per schema text, so a hot type compiles once.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js'
import formatsModule from 'ajv-formats'
import { canonicalJson } from '../model/canonical-json.js'

/** A type's schema is kept beside it in every catalog read: bounded like the data it checks. */
export const EVENT_TYPE_SCHEMA_MAX_BYTES = 16 * 1024

// ajv-formats is CommonJS: its plugin is the module itself or its `default`, by loader.
const addFormats = ((formatsModule as unknown as { default?: unknown }).default ?? formatsModule) as (ajv: Ajv2020) => void

function freshAjv(): Ajv2020 {
  // Strict about the schema itself (a misspelt keyword is an error, not a silent pass), lenient
  // about type unions and tuples, which are legitimate JSON Schema.
  const ajv = new Ajv2020({ strict: true, strictTypes: false, strictTuples: false, strictRequired: false, allErrors: false })
  addFormats(ajv)
  return ajv
}
const ajv = freshAjv()

const COMPILED_MAX = 512
const compiled = new Map<string, ValidateFunction>()

function validatorFor(schema: Readonly<Record<string, unknown>>): ValidateFunction {
  const key = canonicalJson(schema)
  let validate = compiled.get(key)
  if (validate) {
    // Most recently used last: the map's first key is the one to evict.
    compiled.delete(key)
    compiled.set(key, validate)
    return validate
  }
  validate = ajv.compile(schema)
  compiled.set(key, validate)
  if (compiled.size > COMPILED_MAX) compiled.delete(compiled.keys().next().value!)
  return validate
}

/** What is wrong with a schema offered for a type (null: usable), as a sentence. */
export function dataSchemaProblem(schema: unknown): string | null {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return 'must be a JSON Schema object'
  const bytes = Buffer.byteLength(JSON.stringify(schema), 'utf8')
  if (bytes > EVENT_TYPE_SCHEMA_MAX_BYTES) return `is ${bytes} bytes encoded; the limit is ${EVENT_TYPE_SCHEMA_MAX_BYTES}`
  const declared = (schema as { $schema?: unknown }).$schema
  if (declared !== undefined && declared !== 'https://json-schema.org/draft/2020-12/schema') {
    return 'must be JSON Schema draft 2020-12 ($schema "https://json-schema.org/draft/2020-12/schema", or none)'
  }
  // A throwaway instance: a schema with an `$id` would otherwise stay registered under it.
  const probe = freshAjv()
  if (!probe.validateSchema(schema)) return `is not a valid JSON Schema: ${probe.errorsText(probe.errors, { dataVar: 'schema' })}`
  try {
    probe.compile(schema as Record<string, unknown>)
  } catch (err) {
    return `cannot be compiled: ${(err as Error).message}`
  }
  return null
}

/** Where `data` breaks its type's schema: the JSON pointer (from the event, `/data/...`), the field, why. */
export interface DataSchemaViolation {
  readonly pointer: string
  /** The same place as a dotted path (`data.order_id`), as every refusal names its field. */
  readonly field: string
  readonly message: string
}

/** The first place `data` breaks `schema`, or null when it matches. */
export function dataSchemaViolation(schema: Readonly<Record<string, unknown>>, data: unknown): DataSchemaViolation | null {
  const validate = validatorFor(schema)
  if (validate(data)) return null
  const error = validate.errors![0]!
  const pointer = `/data${errorPath(error)}`
  const segments = pointer.slice(1).split('/').map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
  return { pointer, field: segments.join('.'), message: `${pointer} ${error.message ?? 'does not match the schema'}` }
}

// A missing or unexpected property is reported at its parent by Ajv; the pointer names it.
function errorPath(error: ErrorObject): string {
  const escape = (name: string) => `/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`
  const params = error.params as { missingProperty?: string; additionalProperty?: string; unevaluatedProperty?: string }
  const named = params.missingProperty ?? params.additionalProperty ?? params.unevaluatedProperty
  return named === undefined ? error.instancePath : `${error.instancePath}${escape(named)}`
}
