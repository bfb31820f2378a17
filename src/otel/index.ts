/**
 * OpenTelemetry metrics of the limits and of webhook delivery, recorded from the library's
 * diagnostics channels: `import { registerMetrics } from 'api-conventions/otel'`.
 * `@opentelemetry/api` is an optional peer dependency, needed only here.
 * @module
 */
export type { MetricsOptions } from './register-metrics.js';
export { METER_NAME, metricNames, registerMetrics } from './register-metrics.js';
