import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Deployment } from 'kubernetes-models/apps/v1'
import { Secret, Service, type IContainer, type IProbe } from 'kubernetes-models/v1'
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1'
import { PrometheusRule, ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1'
import { parseAllDocuments } from 'yaml'
import { afterAll, describe, expect, it } from 'vitest'
import { LIMIT_BYTES_PER_PLANT, loadConfig, type Config } from '../../src/config/load-config.js'
import { docBlock } from '../docs/blocks.js'
import { imageEnv, TOKEN } from '../helpers.js'

// The manifests under deploy/kubernetes/ (and its monitoring/ folder), checked offline: against the Kubernetes API schemas
// (kubernetes-models: JSON schemas of the Kubernetes OpenAPI document, validated in process), then
// against the service itself: the configuration a pod runs with is loaded by the service's own
// loadConfig from the image's ENV plus the Deployment's env, and the ports, probe paths and shutdown
// timing must agree with it. Change a default in src/config/load-config.ts or the Dockerfile and this fails
// until the manifests follow.
const root = fileURLToPath(new URL('../../', import.meta.url))
const dir = join(root, 'deploy', 'kubernetes')

interface Manifest { file: string, object: { apiVersion?: string, kind?: string, resources?: string[] } }
const manifests: Manifest[] = [dir, join(dir, 'monitoring')].flatMap((folder) =>
  readdirSync(folder).filter((file) => file.endsWith('.yaml')).flatMap((name) => {
    const file = relative(dir, join(folder, name))
    return parseAllDocuments(readFileSync(join(folder, name), 'utf8')).map((document) => {
      if (document.errors.length > 0) throw new Error(`${file}: ${document.errors.map(String).join('; ')}`)
      return { file, object: document.toJS() as Manifest['object'] }
    })
  }))
const only = <T>(kind: string, Model: new (data: never) => T): T => {
  const found = manifests.filter((manifest) => manifest.object.kind === kind)
  if (found.length !== 1) throw new Error(`expected one ${kind} under deploy/kubernetes, found ${found.length}`)
  return new Model(found[0]?.object as never)
}

const deployment = only('Deployment', Deployment)
const service = only('Service', Service)
const budget = only('PodDisruptionBudget', PodDisruptionBudget)
const secret = only('Secret', Secret)
const monitor = only('ServiceMonitor', ServiceMonitor)
const rule = only('PrometheusRule', PrometheusRule)
const pod = deployment.spec?.template.spec
const container = pod?.containers.find((candidate) => candidate.name === 'plant-store') as IContainer

const scratch = mkdtempSync(join(tmpdir(), 'plant-store-k8s-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/**
 * The configuration a pod of the Deployment runs with, with the memory limit the kubelet sets. The
 * Secret's values come from secret.example.yaml; the tokens file is written where loadConfig reads it.
 */
function podConfig (): Config {
  const env: Record<string, string> = { ...imageEnv() }
  const secretData = secret.stringData ?? {}
  for (const variable of container.env ?? []) {
    const key = variable.valueFrom?.secretKeyRef?.key
    env[variable.name] = variable.value ?? (key === undefined ? '' : secretData[key] ?? '')
  }
  const tokens = join(scratch, 'tokens')
  writeFileSync(tokens, secretData.tokens ?? '')
  return loadConfig({ ...env, API_TOKENS_FILE: tokens }, { memoryLimit: () => bytes(container.resources?.limits?.memory) })
}

/** A Kubernetes quantity of bytes (Mi, Gi, M, G, or plain). */
function bytes (quantity: unknown): number {
  const match = /^(\d+)(Ki|Mi|Gi|k|M|G)?$/.exec(String(quantity))
  if (match === null) throw new Error(`not a byte quantity: ${String(quantity)}`)
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, k: 1e3, M: 1e6, G: 1e9 }[match[2] ?? ''] ?? 1
  return Number(match[1]) * unit
}

/** The container port a probe or Service names (by name or number). */
const portOf = (port: string | number | undefined): number | undefined =>
  typeof port === 'number' ? port : container.ports?.find((candidate) => candidate.name === port)?.containerPort

const probe = (name: 'readinessProbe' | 'livenessProbe' | 'startupProbe'): IProbe => {
  const found = container[name]
  if (found === undefined) throw new Error(`the container has no ${name}`)
  return found
}

describe('deploy/kubernetes', () => {
  it('holds a Deployment, a Service, a PodDisruptionBudget, an example Secret; monitoring/ a ServiceMonitor and a PrometheusRule; each valid', () => {
    expect(manifests.map((manifest) => `${manifest.file} ${manifest.object.kind ?? ''}`).sort()).toEqual([
      'deployment.yaml Deployment', 'kustomization.yaml Kustomization', 'monitoring/kustomization.yaml Kustomization',
      'monitoring/prometheusrule.yaml PrometheusRule', 'monitoring/servicemonitor.yaml ServiceMonitor',
      'poddisruptionbudget.yaml PodDisruptionBudget', 'secret.example.yaml Secret', 'service.yaml Service'
    ])
    // Valid against the Kubernetes schemas, and the Operator's CRDs for the last two.
    for (const model of [deployment, service, budget, secret, monitor, rule]) expect(() => { model.validate() }).not.toThrow()
  })

  it('applies on a bare cluster: kustomization.yaml holds built-in kinds only (no Secret), monitoring/ the Operator\'s', () => {
    /** The kinds of the resources a kustomization in `folder` (relative to deploy/kubernetes) lists. */
    const kinds = (folder: string): string[] => {
      const kustomization = manifests.find((manifest) => manifest.file === join(folder, 'kustomization.yaml'))
      return (kustomization?.object.resources ?? []).flatMap((resource) => manifests
        .filter((manifest) => manifest.file === join(folder, resource)).map((manifest) => `${manifest.object.apiVersion ?? ''} ${manifest.object.kind ?? ''}`))
        .sort()
    }
    // The example Secret is never applied with the rest: its values are placeholders.
    expect(kinds('.')).toEqual(['apps/v1 Deployment', 'policy/v1 PodDisruptionBudget', 'v1 Service'])
    expect(kinds('monitoring')).toEqual(['monitoring.coreos.com/v1 PrometheusRule', 'monitoring.coreos.com/v1 ServiceMonitor'])
  })

  it('the CRD schema check rejects what the API server would (a ServiceMonitor endpoint\'s interval that is no duration)', () => {
    const broken = new ServiceMonitor(JSON.parse(JSON.stringify(monitor).replace('"interval":"15s"', '"interval":"often"')) as never)
    expect(() => { broken.validate() }).toThrow(/interval/)
  })

  it('has the ServiceMonitor scrape the Service\'s metrics port, which reaches METRICS_PORT on the pods, as the job every rule selects', () => {
    const config = podConfig()
    const serviceLabels = service.metadata?.labels ?? {}
    // It selects this Service (in its own namespace, the Operator's default) and no other kind of object.
    expect(serviceLabels).toMatchObject(monitor.spec.selector.matchLabels ?? {})
    expect(monitor.spec.namespaceSelector).toBeUndefined()
    const endpoints = monitor.spec.endpoints ?? []
    expect(endpoints.map((endpoint) => endpoint.path ?? '/metrics')).toEqual(['/metrics'])
    const servicePort = service.spec?.ports?.find((port) => port.name === endpoints[0]?.port)
    expect(portOf(servicePort?.targetPort)).toBe(config.METRICS_PORT)
    // The job label comes from the Service's label named by jobLabel (without it, the Service's name).
    const job = monitor.spec.jobLabel === undefined ? service.metadata?.name : serviceLabels[monitor.spec.jobLabel]
    const selectedJobs = new Set([...JSON.stringify(rule.spec).matchAll(/job=\\"([^"\\]*)\\"/g)].map((match) => match[1]))
    expect(selectedJobs.size).toBeGreaterThan(0)
    expect([...selectedJobs]).toEqual([job])
  })

  it('the schema check rejects what the API server would (a port that is not a number)', () => {
    const broken = new Deployment(JSON.parse(JSON.stringify(deployment).replace(/"containerPort":(\d+)/, '"containerPort":"$1"')) as never)
    expect(() => { broken.validate() }).toThrow(/containerPort must be integer/)
  })

  it('runs 2+ replicas, rolls out without going below them, and lets a disruption take at most one', () => {
    const replicas = deployment.spec?.replicas ?? 1
    expect(replicas).toBeGreaterThanOrEqual(2)
    expect(deployment.spec?.strategy?.rollingUpdate?.maxUnavailable).toBe(0)
    const budgetAllows = budget.spec?.maxUnavailable ?? replicas - Number(budget.spec?.minAvailable ?? replicas)
    expect(budgetAllows).toBeGreaterThanOrEqual(1)
    expect(budgetAllows).toBeLessThan(replicas)
  })

  it('selects its own pods from the Service and the PodDisruptionBudget', () => {
    const labels = deployment.spec?.template.metadata?.labels ?? {}
    expect(deployment.spec?.selector.matchLabels).toEqual(labels)
    expect(service.spec?.selector).toEqual(labels)
    expect(budget.spec?.selector?.matchLabels).toEqual(labels)
  })

  it('exposes the ports the service listens on (PORT, METRICS_PORT), the Service sending to the API port', () => {
    const config = podConfig()
    expect(portOf('http')).toBe(config.PORT)
    expect(portOf('metrics')).toBe(config.METRICS_PORT)
    expect(portOf(service.spec?.ports?.[0]?.targetPort)).toBe(config.PORT)
    expect(config.HOST).toBe('0.0.0.0')
  })

  it('probes readiness on /readyz and liveness (and start) on /livez, on the API port', () => {
    const config = podConfig()
    expect(probe('readinessProbe').httpGet?.path).toBe('/readyz')
    expect(probe('livenessProbe').httpGet?.path).toBe('/livez')
    expect(probe('startupProbe').httpGet?.path).toBe('/livez')
    for (const name of ['readinessProbe', 'livenessProbe', 'startupProbe'] as const) expect(portOf(probe(name).httpGet?.port)).toBe(config.PORT)
  })

  it('gives the shutdown its time: terminationGracePeriodSeconds ≥ SHUTDOWN_DELAY_MS + SHUTDOWN_TIMEOUT_MS + 1 s, and readiness fails within the delay', () => {
    const config = podConfig()
    expect(config.SHUTDOWN_DELAY_MS).toBeGreaterThan(0)
    const graceMs = (pod?.terminationGracePeriodSeconds ?? 30) * 1000
    expect(graceMs).toBeGreaterThanOrEqual(config.SHUTDOWN_DELAY_MS + config.SHUTDOWN_TIMEOUT_MS + 1000)
    // The pod's own readiness turns 503 at SIGTERM; the kubelet sees it within period × threshold,
    // before the drain starts, however slowly the endpoint removal travels.
    const readiness = probe('readinessProbe')
    expect((readiness.periodSeconds ?? 10) * (readiness.failureThreshold ?? 3) * 1000).toBeLessThanOrEqual(config.SHUTDOWN_DELAY_MS)
  })

  it('never restarts a pod for a slow answer the service itself would shed: liveness timeout above MAX_EVENT_LOOP_DELAY_MS', () => {
    const config = podConfig()
    expect((probe('livenessProbe').timeoutSeconds ?? 1) * 1000).toBeGreaterThan(config.MAX_EVENT_LOOP_DELAY_MS)
    expect((probe('readinessProbe').timeoutSeconds ?? 1) * 1000).toBeGreaterThan(config.MAX_EVENT_LOOP_DELAY_MS)
  })

  it('sets a memory limit from which the memory store\'s capacity (507) and the resident-memory shedding (503) are derived', () => {
    const limit = bytes(container.resources?.limits?.memory)
    const config = podConfig()
    expect(config.MAX_PLANTS).toBe(Math.min(1000000, Math.floor(limit / LIMIT_BYTES_PER_PLANT)))
    expect(config.MAX_RSS_ANON_BYTES).toBe(Math.floor(limit * 0.85))
    expect(config.MAX_RSS_ANON_BYTES).toBeLessThan(limit)
    expect(bytes(container.resources?.requests?.memory)).toBeLessThanOrEqual(limit)
  })

  it('keeps the image\'s entry point (tini as PID 1, so that a fatal error ends the container): no command of its own', () => {
    expect(readFileSync(join(root, 'Dockerfile'), 'utf8')).toMatch(/^ENTRYPOINT \["tini", "--"\]$/m)
    expect(container.command).toBeUndefined()
  })

  it('runs as the image\'s non-root user on a read-only root filesystem, without privileges, /tmp in memory', () => {
    expect(pod?.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000 })
    expect(container.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } })
    const tmp = container.volumeMounts?.find((mount) => mount.mountPath === '/tmp')
    expect(pod?.volumes?.find((volume) => volume.name === tmp?.name)?.emptyDir).toEqual({ medium: 'Memory', sizeLimit: '16Mi' })
  })

  it('reads the tokens from a Secret file (API_TOKENS_FILE) and DATABASE_URL from a Secret, never inline', () => {
    const env = new Map((container.env ?? []).map((variable) => [variable.name, variable]))
    expect(env.has('API_TOKENS')).toBe(false)
    expect(env.get('DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual({ name: 'plant-store', key: 'database-url' })
    const file = env.get('API_TOKENS_FILE')?.value ?? ''
    const mount = container.volumeMounts?.find((candidate) => file.startsWith(`${candidate.mountPath}/`))
    expect(mount?.readOnly).toBe(true)
    const volume = pod?.volumes?.find((candidate) => candidate.name === mount?.name)
    expect(volume?.secret?.secretName).toBe('plant-store')
    expect(volume?.secret?.items).toEqual([{ key: 'tokens', path: file.slice((mount?.mountPath.length ?? 0) + 1) }])
    // A directory: with subPath the kubelet never updates the file, and a rotation is never seen.
    expect(mount?.subPath).toBeUndefined()
    expect(Object.keys(secret.stringData ?? {}).sort()).toEqual(['database-url', 'tokens'])
    // The example's values load: a postgres URL and at least one token.
    expect(podConfig()).toMatchObject({ DATABASE_URL: expect.stringMatching(/^postgres:\/\//) as unknown, tokens: [expect.anything()] })
  })
})

describe('the image\'s shutdown defaults (Dockerfile ENV)', () => {
  it('fit Docker\'s 10 s stop timeout: SHUTDOWN_DELAY_MS + SHUTDOWN_TIMEOUT_MS + 1 s ≤ 10 s, with a delay', () => {
    const config = loadConfig({ ...imageEnv(), API_TOKENS: TOKEN }, { memoryLimit: () => undefined })
    expect(config.SHUTDOWN_DELAY_MS).toBeGreaterThan(0)
    expect(config.SHUTDOWN_DELAY_MS + config.SHUTDOWN_TIMEOUT_MS + 1000).toBeLessThanOrEqual(10000)
  })
})

// docs/deployment.md's lines for a cluster, run by bash with stand-ins for docker, kustomize and kubectl that
// record each call (no registry or cluster here): every name and path they give must be the manifests' own.
describe('docs/deployment.md\'s Kubernetes recipe', () => {
  it('builds and pushes the image kustomize sets, makes the Secret the Deployment reads, applies folders that exist, waits for the Deployment', () => {
    const bin = mkdtempSync(join(scratch, 'bin-'))
    const log = join(bin, 'calls.log')
    for (const tool of ['docker', 'kustomize', 'kubectl']) {
      writeFileSync(join(bin, tool), `#!/bin/bash\n{ printf '%s' "$(basename "$0")"; printf '\\t%s' "$PWD" "$@"; printf '\\n'; } >> "${log}"\n`)
      chmodSync(join(bin, tool), 0o755)
    }
    const ran = spawnSync('bash', ['--norc', '-euo', 'pipefail', '-c', docBlock('docs/deployment.md', 'kubernetes-deploy')],
      { cwd: root, env: { PATH: `${bin}:${process.env.PATH}` }, encoding: 'utf8' })
    expect([ran.status, ran.stderr]).toEqual([0, ''])
    const calls = readFileSync(log, 'utf8').trimEnd().split('\n').map((line) => line.split('\t'))
    const by = (name: string): string[][] => calls.filter((call) => call[0] === name).map((call) => call.slice(1))

    const [build, push] = by('docker')
    const image = build?.[build.indexOf('-t') + 1] ?? ''
    expect(build?.slice(1)).toEqual(['build', '-t', image, '.'])
    expect(push?.slice(1)).toEqual(['push', image])
    // kustomize, in the folder of kustomization.yaml, replaces the Deployment's image by name with the pushed one.
    const [edit] = by('kustomize')
    expect(edit?.[0]).toBe(join(root, 'deploy', 'kubernetes'))
    expect(edit?.slice(1)).toEqual(['edit', 'set', 'image', `${container.image?.split(':')[0] ?? ''}=${image}`])

    const kubectl = by('kubectl').map((call) => call.slice(1))
    const secretCall = kubectl.find((call) => call[0] === 'create') ?? []
    expect(secretCall.slice(0, 3)).toEqual(['create', 'secret', 'generic'])
    const keys = secretCall.flatMap((arg) => /^--from-(?:file|literal)=([^=]+)=/.exec(arg)?.[1] ?? [])
    const volumeSecret = pod?.volumes?.find((volume) => volume.secret !== undefined)?.secret
    const read = [
      ...(container.env ?? []).flatMap((variable) => variable.valueFrom?.secretKeyRef === undefined ? [] : [variable.valueFrom.secretKeyRef]),
      ...(volumeSecret?.items ?? []).map((item) => ({ name: volumeSecret?.secretName, key: item.key }))
    ]
    expect(read.length).toBeGreaterThan(1)
    for (const reference of read) expect([reference.name, keys]).toEqual([secretCall[3], expect.arrayContaining([reference.key])])

    const applied = kubectl.filter((call) => call[0] === 'apply').map((call) => call[call.indexOf('-k') + 1] ?? '')
    expect(applied).toEqual(['deploy/kubernetes', 'deploy/kubernetes/monitoring'])
    for (const folder of applied) expect(existsSync(join(root, folder, 'kustomization.yaml'))).toBe(true)
    expect(kubectl.find((call) => call[0] === 'rollout')).toEqual(['rollout', 'status', `deployment/${deployment.metadata?.name ?? ''}`])
  })
})
