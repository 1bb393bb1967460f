import { describe, expect, it } from 'vitest'
import { baseImageUnavailable, type BaseImageProbe } from './docker.js'

// The container suite's decision to run or skip: on a machine with Docker but without root and
// debootstrap it skips with the reason instead of failing in its build. No engine needed: the probes are fakes.
const probe = (present: boolean, buildable: boolean, pull: boolean, asked: string[] = []): BaseImageProbe => ({
  present: () => { asked.push('present'); return present },
  buildable: () => { asked.push('buildable'); return buildable },
  pull: () => { asked.push('pull'); return pull }
})

describe('the container suite\'s base image', () => {
  it('runs with the image already on the engine, asking nothing more (no pull, no build)', () => {
    const asked: string[] = []
    expect(baseImageUnavailable('node:24-bookworm-slim', probe(true, false, false, asked))).toBeUndefined()
    expect(asked).toEqual(['present'])
  })

  it('runs where .ci/docker-base.sh can build it (root and debootstrap), without pulling', () => {
    const asked: string[] = []
    expect(baseImageUnavailable('node:24-bookworm-slim', probe(false, true, false, asked))).toBeUndefined()
    expect(asked).toEqual(['present', 'buildable'])
  })

  it('runs where a registry answers the pull', () => {
    expect(baseImageUnavailable('node:24-bookworm-slim', probe(false, false, true))).toBeUndefined()
  })

  it('skips with the reason where it can neither find, build nor pull it', () => {
    expect(baseImageUnavailable('node:24-bookworm-slim', probe(false, false, false)))
      .toBe('node:24-bookworm-slim is not on this Docker engine, cannot be pulled, and .ci/docker-base.sh cannot build it here (it needs root and debootstrap)')
  })
})
