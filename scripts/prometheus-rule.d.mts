// Types of scripts/prometheus-rule.mjs, for the test that compares the committed PrometheusRule with a fresh one.
export const RULES_FILE: string
export const PROMETHEUS_RULE_FILE: string
/** The command that rewrites the committed PrometheusRule. */
export const REGENERATE: string
export function prometheusRuleText (rulesText: string): string
