import { BadRequestException, UnsupportedResultException } from '@aws-sdk/client-rds-data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejectionOf, startHarness, type Harness } from './harness.js';

describe('local Data API: results', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('results', { maxResponseBytes: 64 * 1024 });
    await h.execute("CREATE TYPE mood AS ENUM ('ok', 'sad')");
  });
  afterAll(async () => h?.close());
  const first = async (sql: string, extra = {}) => (await h.execute(sql, undefined, extra)).records?.[0]?.[0];

  it.each([
    ['int2', '7::int2', { longValue: 7 }],
    ['int4', '-7::int4', { longValue: -7 }],
    ['int8', '5000000000::int8', { longValue: 5000000000 }],
    ['float4', '1.5::float4', { doubleValue: 1.5 }],
    ['float8', "'-Infinity'::float8", { doubleValue: -Infinity }],
    ['numeric keeps its scale as a string', '123456.789::numeric(10,4)', { stringValue: '123456.7890' }],
    ['bool', 'false', { booleanValue: false }],
    ['bytea as base64', "'\\x00ff'::bytea", { blobValue: new Uint8Array([0, 255]) }],
    ['text', "'héllo'::text", { stringValue: 'héllo' }],
    ['varchar', "'v'::varchar(3)", { stringValue: 'v' }],
    ['char(n)', "'c'::char(3)", { stringValue: 'c  ' }],
    ['uuid', "'6f1c5cbe-5e5d-4a53-9d0e-5a1f3b0d9a11'::uuid", { stringValue: '6f1c5cbe-5e5d-4a53-9d0e-5a1f3b0d9a11' }],
    ['enum', "'sad'::mood", { stringValue: 'sad' }],
    ['inet', "'10.0.0.1'::inet", { stringValue: '10.0.0.1' }],
    ['jsonb compacted', `'{"x": 0, "y": "0 1", "z": [1, 2.50]}'::jsonb`, { stringValue: '{"x":0,"y":"0 1","z":[1,2.50]}' }],
    ['json compacted, big numbers kept', `'{ "n" : 123456789012345678901234567890 }'::json`, { stringValue: '{"n":123456789012345678901234567890}' }],
    ['date', "'2024-02-29'::date", { stringValue: '2024-02-29' }],
    ['time', "'12:34:56.789'::time", { stringValue: '12:34:56.789' }],
    ['timestamp with microseconds', "'2024-01-02 03:04:05.123456'::timestamp", { stringValue: '2024-01-02 03:04:05.123456' }],
    ['timestamptz in UTC without offset', "'2024-01-02 03:04:05.5+05:30'::timestamptz", { stringValue: '2024-01-01 21:34:05.5' }],
    ['timetz in UTC', "'15:30:00-08'::timetz", { stringValue: '23:30:00' }],
    ['interval as text', "'1 day 2 hours'::interval", { stringValue: '1 day 02:00:00' }],
    ['NULL', 'NULL::int', { isNull: true }],
    ['int[] keeping NULL elements', "'{1,NULL,3}'::int[]", { arrayValue: { longValues: [1, null, 3] } }],
    ['text[] with quoting', `ARRAY['a b', NULL, 'NULL', 'x"y', 'c\\d']`, { arrayValue: { stringValues: ['a b', null, 'NULL', 'x"y', 'c\\d'] } }],
    ['bool[]', "'{t,f}'::bool[]", { arrayValue: { booleanValues: [true, false] } }],
    ['float8[]', "'{1.5,2}'::float8[]", { arrayValue: { doubleValues: [1.5, 2] } }],
    ['empty int8[]', "'{}'::int8[]", { arrayValue: { longValues: [] } }],
    ['timestamptz[] in UTC', "ARRAY['2024-01-02 00:00:00+01'::timestamptz]", { arrayValue: { stringValues: ['2024-01-01 23:00:00'] } }],
  ])('returns %s', async (_, expression, field) => {
    expect(await first(`SELECT ${expression}`)).toEqual(field);
  });

  it('returns timestamptz in UTC even after the session changes its time zone', async () => {
    const transactionId = await h.begin();
    await h.execute("SET LOCAL TIME ZONE 'America/New_York'", undefined, { transactionId });
    const result = await h.execute("SELECT '2024-07-01 12:00:00+00'::timestamptz", undefined, { transactionId });
    expect(result.records?.[0]?.[0]).toEqual({ stringValue: '2024-07-01 12:00:00' });
    await h.rollback(transactionId);
  });

  it('refuses money, geometric types and multidimensional arrays with UnsupportedResultException', async () => {
    for (const expression of ['12.34::money', "'(1,2)'::point", "'{{1,2},{3,4}}'::int[]", "ARRAY['1'::money]"]) {
      const error = await rejectionOf(h.execute(`SELECT ${expression}`));
      expect(error).toBeInstanceOf(UnsupportedResultException);
      expect(error.$metadata.httpStatusCode).toBe(400);
    }
    expect((await rejectionOf(h.execute('SELECT 1::money'))).message).toBe('The result contains the unsupported data type money.');
    expect(await first('SELECT 12.34::money::text')).toEqual({ stringValue: '$12.34' });
  });

  it('returns int8 as a string with longReturnType STRING, keeping every digit', async () => {
    const extra = { resultSetOptions: { longReturnType: 'STRING' as const } };
    expect(await first('SELECT 9007199254740993::int8', extra)).toEqual({ stringValue: '9007199254740993' });
    expect(await first("SELECT '{1,2}'::int8[]", extra)).toEqual({ arrayValue: { stringValues: ['1', '2'] } });
  });

  it('sends int8 beyond 2^53 as raw digits (the SDK then rounds, as the reference records)', async () => {
    const response = await fetch(`${h.server.endpoint}/Execute`, {
      method: 'POST',
      body: JSON.stringify({ resourceArn: h.server.resourceArn, secretArn: h.server.secretArn, sql: 'SELECT 9007199254740993::int8' }),
    });
    expect(await response.text()).toContain('{"longValue":9007199254740993}');
  });

  it('returns numeric as long or double with decimalReturnType DOUBLE_OR_LONG', async () => {
    const extra = { resultSetOptions: { decimalReturnType: 'DOUBLE_OR_LONG' as const } };
    expect(await first('SELECT 12::numeric', extra)).toEqual({ longValue: 12 });
    expect(await first('SELECT 12.5::numeric(5,2)', extra)).toEqual({ doubleValue: 12.5 });
  });

  it('returns columnMetadata only with includeResultMetadata, with JDBC type codes and PostgreSQL type names', async () => {
    const without = await h.execute('SELECT 123');
    expect(without.columnMetadata).toBeUndefined();
    const result = await h.execute("SELECT 123, 'x'::varchar(20) AS v, 1.5::numeric(10,4) AS n, '{1}'::int4[] AS a, now() AS t", undefined, {
      includeResultMetadata: true,
    });
    expect(result.columnMetadata?.[0]).toEqual({
      arrayBaseColumnType: 0,
      isAutoIncrement: false,
      isCaseSensitive: false,
      isCurrency: false,
      isSigned: true,
      label: '?column?',
      name: '?column?',
      nullable: 2,
      precision: 10,
      scale: 0,
      schemaName: '',
      tableName: '',
      type: 4,
      typeName: 'int4',
    });
    expect(
      result.columnMetadata
        ?.slice(1)
        .map(({ name, type, typeName, precision, scale, arrayBaseColumnType }) => ({ name, type, typeName, precision, scale, arrayBaseColumnType })),
    ).toEqual([
      { name: 'v', type: 12, typeName: 'varchar', precision: 20, scale: 0, arrayBaseColumnType: 0 },
      { name: 'n', type: 2, typeName: 'numeric', precision: 10, scale: 4, arrayBaseColumnType: 0 },
      { name: 'a', type: 2003, typeName: '_int4', precision: 0, scale: 0, arrayBaseColumnType: 4 },
      { name: 't', type: 93, typeName: 'timestamptz', precision: 35, scale: 0, arrayBaseColumnType: 0 },
    ]);
  });

  it('returns formattedRecords with formatRecordsAs JSON, and no records', async () => {
    const result = await h.execute(
      "SELECT 1 AS i, 9007199254740993::int8 AS big, 1.50::numeric AS d, 2.5::float8 AS f, true AS b, '\\x0102'::bytea AS blob, '{1,NULL}'::int[] AS arr, NULL::text AS nothing, '2024-01-02 03:04:05+00'::timestamptz AS at",
      undefined,
      { formatRecordsAs: 'JSON' },
    );
    expect(result.records).toBeUndefined();
    expect(result.formattedRecords).toBe(
      '[{"i":1,"big":9007199254740993,"d":"1.50","f":2.5,"b":true,"blob":"AQI=","arr":[1,null],"nothing":null,"at":"2024-01-02 03:04:05"}]',
    );
    const typed = await h.execute('SELECT 1.50::numeric AS d, 7::int8 AS l', undefined, {
      formatRecordsAs: 'JSON',
      resultSetOptions: { decimalReturnType: 'DOUBLE_OR_LONG', longReturnType: 'STRING' },
    });
    expect(JSON.parse(typed.formattedRecords as string)).toEqual([{ d: 1.5, l: '7' }]);
  });

  it('keys formattedRecords by any column name, __proto__ and constructor included', async () => {
    const result = await h.execute('SELECT 1 AS "__proto__", 2 AS "constructor"', undefined, { formatRecordsAs: 'JSON' });
    expect(result.formattedRecords).toBe('[{"__proto__":1,"constructor":2}]');
  });

  it('refuses duplicate column names with formatRecordsAs JSON, naming the column', async () => {
    const error = await rejectionOf(h.execute('SELECT 1 AS a, 2 AS a', undefined, { formatRecordsAs: 'JSON' }));
    expect(error).toBeInstanceOf(BadRequestException);
    expect(error.message).toContain('"a"');
  });

  it('reports numberOfRecordsUpdated from the row count, 0 for SELECT, with RETURNING rows', async () => {
    const created = await h.execute('CREATE TABLE counted (id int PRIMARY KEY, v text)');
    expect(created).toMatchObject({ numberOfRecordsUpdated: 0, generatedFields: [] });
    expect(created.records).toBeUndefined();
    const inserted = await h.execute("INSERT INTO counted VALUES (1, 'a'), (2, 'b'), (3, 'c')");
    expect(inserted.numberOfRecordsUpdated).toBe(3);
    const updated = await h.execute("UPDATE counted SET v = 'z' WHERE id >= 2 RETURNING id");
    expect(updated.numberOfRecordsUpdated).toBe(2);
    expect(updated.records).toEqual([[{ longValue: 2 }], [{ longValue: 3 }]]);
    const selected = await h.execute('SELECT * FROM counted');
    expect(selected.numberOfRecordsUpdated).toBe(0);
    expect(selected.records).toHaveLength(3);
    const none = await h.execute('SELECT * FROM counted WHERE false');
    expect(none.records).toEqual([]);
  });

  it('fails a response over the size limit with "Database response exceeded size limit", after the statement ran', async () => {
    await h.execute('CREATE TABLE sized (v text)');
    const error = await rejectionOf(h.execute("INSERT INTO sized SELECT repeat('x', 1000) FROM generate_series(1, 100) RETURNING v"));
    expect(error).toBeInstanceOf(BadRequestException);
    expect(error.message).toBe('Database response exceeded size limit');
    const { rows } = await h.direct.query('SELECT count(*)::int AS n FROM sized');
    expect(rows[0].n).toBe(100);
    // Just under the limit passes; the JSON format has a ten times larger limit.
    expect((await h.execute("SELECT repeat('x', 60000)")).records).toHaveLength(1);
    expect((await h.execute('SELECT v FROM sized', undefined, { formatRecordsAs: 'JSON' })).formattedRecords).toHaveLength(100 * 1008 + 101);
  });
});
