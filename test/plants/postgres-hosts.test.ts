import { describe, expect, it } from 'vitest'
import { parsePostgresUrl } from '../../src/sql/postgres-hosts.js'

// No server needed: how a DATABASE_URL is read (the errors are in test/storage.test.ts).
describe('parsePostgresUrl', () => {
  it('keeps a one-host URL as it is, with target_session_attrs any by default, and sslmode read as libpq does', () => {
    const url = 'postgres://plants:s%2Fcret@db.internal:6432/plants?options=-c%20search_path%3Dp&sslmode=require'
    expect(parsePostgresUrl(url)).toEqual({ hosts: [{ label: 'db.internal:6432', url: `${url}&uselibpqcompat=true` }], attrs: 'any' })
    const own = 'postgres://u@h/db?sslmode=require&uselibpqcompat=false'
    expect(parsePostgresUrl(own).hosts[0]?.url).toBe(own)
    expect(parsePostgresUrl('postgres://u@h/db').hosts[0]?.url).toBe('postgres://u@h/db')
  })

  it('splits libpq\'s host list into one URL per host, in order, each with the user, password, database and parameters', () => {
    const parsed = parsePostgresUrl('postgresql://plants:secret@db1:5433,db2,[::1]:5434/plants?target_session_attrs=read-write&application_name=x')
    expect(parsed.attrs).toBe('read-write')
    expect(parsed.hosts).toEqual([
      { label: 'db1:5433', url: 'postgresql://plants:secret@db1:5433/plants?target_session_attrs=read-write&application_name=x' },
      { label: 'db2:5432', url: 'postgresql://plants:secret@db2/plants?target_session_attrs=read-write&application_name=x' },
      { label: '[::1]:5434', url: 'postgresql://plants:secret@[::1]:5434/plants?target_session_attrs=read-write&application_name=x' }
    ])
  })

  it('takes primary and any, and leaves a URL without a host (a Unix socket) to pg', () => {
    expect(parsePostgresUrl('postgres://u@h1,h2/db?target_session_attrs=primary').attrs).toBe('primary')
    expect(parsePostgresUrl('postgres://u@/db?host=/var/run/postgresql').hosts).toEqual([{
      label: 'default host',
      url: 'postgres://u@/db?host=/var/run/postgresql'
    }])
  })
})
