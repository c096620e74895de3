/**
 * Live delivery in AWS (DECISIONS §11; the contract of issue 13): the
 * WebSocket API and its routes, the stage and its access log, the
 * connections table, the data table's stream and the broadcast's event
 * source mapping, the failure queue, the alarms, each live function's exact
 * permissions and environment, the display-read routes and the LiveUrl
 * output. Offline, on the synthesized templates of both modes.
 */
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { functionsOf } from '../lib/nurse-call-stack';
import {
  DYNAMODB_VIA,
  Json,
  MODES,
  SQS_VIA,
  apiId,
  apiResourcesOf,
  assertQueuesProtected,
  commonEnvironment,
  environmentOf,
  functionId,
  managedPoliciesOf,
  mappingsOf,
  matches,
  only,
  permissionsOf,
  queueId,
  resourcesOf,
  rustSource,
  routesOf,
  streamFiltersOf,
  tableId,
  text,
  topicTemplates,
} from './helpers';

const templates = topicTemplates();

for (const mode of MODES) {
  const template = templates[mode];
  const production = mode === 'production';
  const websocket = () => apiId(template, 'WEBSOCKET');
  const functionRef = (name: Parameters<typeof functionId>[1]) => ({ Ref: functionId(template, name) });
  const liveUrl = () => `wss://{${websocket()}}.execute-api.\${AWS::Region}.\${AWS::URLSuffix}/live`;

  describe(`${mode}: the WebSocket API`, () => {
    it('one WebSocket API, named after the installation, routing on the body\'s action', () => {
      const [, api] = only(
        Object.fromEntries(
          Object.entries(resourcesOf(template, 'AWS::ApiGatewayV2::Api')).filter(
            ([, a]) => a.Properties.ProtocolType === 'WEBSOCKET',
          ),
        ),
        'WebSocket API',
      );
      assert.equal(api.Properties.Name, `nurse-call-test-${mode}-live`);
      assert.equal(api.Properties.RouteSelectionExpression, '$request.body.action');
    });

    it('exactly $connect and $disconnect to live-connect, and ping answered by a MOCK integration', () => {
      assert.deepEqual(routesOf(template, 'WEBSOCKET'), {
        $connect: 'live-connect',
        $disconnect: 'live-connect',
        ping: 'MOCK',
      });
      for (const route of Object.values(apiResourcesOf(template, 'AWS::ApiGatewayV2::Route', 'WEBSOCKET'))) {
        // The token is checked by live-connect itself (a 401 refuses the upgrade).
        assert.equal(route.Properties.AuthorizationType, 'NONE');
        assert.equal(route.Properties.ApiKeyRequired ?? false, false);
      }
    });

    it('$connect and $disconnect: one Lambda proxy integration, and API Gateway may invoke live-connect for those two routes of this API only', () => {
      const integrations = Object.values(apiResourcesOf(template, 'AWS::ApiGatewayV2::Integration', 'WEBSOCKET')).filter(
        (i) => i.Properties.IntegrationType !== 'MOCK',
      );
      assert.equal(integrations.length, 1);
      assert.equal(integrations[0].Properties.IntegrationType, 'AWS_PROXY');
      assert.equal(
        text(integrations[0].Properties.IntegrationUri),
        `arn:\${AWS::Partition}:apigateway:\${AWS::Region}:lambda:path/2015-03-31/functions/{${functionId(template, 'live-connect')}.Arn}/invocations`,
      );
      const permissions = Object.values(resourcesOf(template, 'AWS::Lambda::Permission')).filter(
        (p) => p.Properties.FunctionName['Fn::GetAtt']?.[0] === functionId(template, 'live-connect'),
      );
      assert.deepEqual(
        permissions.map((p) => `${p.Properties.Principal} ${p.Properties.Action} ${text(p.Properties.SourceArn)}`).sort(),
        ['$connect', '$disconnect'].map(
          (route) =>
            `apigateway.amazonaws.com lambda:InvokeFunction arn:\${AWS::Partition}:execute-api:\${AWS::Region}:\${AWS::AccountId}:{${websocket()}}/*${route}`,
        ),
      );
    });

    it('ping is two-way and answered {"type":"pong"} by API Gateway, without a Lambda', () => {
      const routes = apiResourcesOf(template, 'AWS::ApiGatewayV2::Route', 'WEBSOCKET');
      const [routeId, route] = only(
        Object.fromEntries(Object.entries(routes).filter(([, r]) => r.Properties.RouteKey === 'ping')),
        'ping route',
      );
      const integrationId = route.Properties.Target['Fn::Join'][1][1].Ref;
      const integration = resourcesOf(template, 'AWS::ApiGatewayV2::Integration')[integrationId];
      // The MOCK's status comes from its request template, always the one of `$default`.
      assert.equal(integration.Properties.IntegrationType, 'MOCK');
      assert.equal(integration.Properties.TemplateSelectionExpression, '\\$default');
      assert.deepEqual(Object.keys(integration.Properties.RequestTemplates), ['$default']);
      assert.deepEqual(JSON.parse(integration.Properties.RequestTemplates.$default), { statusCode: 200 });
      // Its integration response maps any answer to the pong.
      const [, response] = only(
        Object.fromEntries(
          Object.entries(resourcesOf(template, 'AWS::ApiGatewayV2::IntegrationResponse')).filter(
            ([, r]) => r.Properties.IntegrationId.Ref === integrationId,
          ),
        ),
        'integration response of ping',
      );
      assert.deepEqual(response.Properties.ApiId, { Ref: websocket() });
      assert.equal(response.Properties.IntegrationResponseKey, '$default');
      assert.equal(response.Properties.TemplateSelectionExpression, '\\$default');
      assert.deepEqual(Object.keys(response.Properties.ResponseTemplates), ['$default']);
      assert.deepEqual(JSON.parse(response.Properties.ResponseTemplates.$default), { type: 'pong' });
      // Two-way: a route response, selected for every answer.
      assert.equal(route.Properties.RouteResponseSelectionExpression, '$default');
      const [, routeResponse] = only(
        Object.fromEntries(
          Object.entries(resourcesOf(template, 'AWS::ApiGatewayV2::RouteResponse')).filter(
            ([, r]) => r.Properties.RouteId.Ref === routeId,
          ),
        ),
        'route response of ping',
      );
      assert.equal(routeResponse.Properties.RouteResponseKey, '$default');
      // No function behind it.
      assert.ok(
        !Object.values(resourcesOf(template, 'AWS::Lambda::Permission')).some((p) =>
          text(p.Properties.SourceArn ?? '').endsWith('ping'),
        ),
      );
    });

    // The throttling from the props: stack.test.ts, for both stages.
    it('stage `live`: deployed automatically, throttled like the HTTP stage, access logs without query strings', () => {
      const [, stage] = only(apiResourcesOf(template, 'AWS::ApiGatewayV2::Stage', 'WEBSOCKET'), 'WebSocket stage');
      assert.equal(stage.Properties.StageName, 'live');
      assert.equal(stage.Properties.AutoDeploy, true);
      assert.deepEqual(stage.Properties.DefaultRouteSettings, { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 });
      const group = stage.Properties.AccessLogSettings.DestinationArn['Fn::GetAtt'];
      assert.equal(group[1], 'Arn');
      assert.equal(resourcesOf(template, 'AWS::Logs::LogGroup')[group[0]].Properties.RetentionInDays, production ? 90 : 14);
      // Its own log group: not a function's, not the HTTP API's.
      const httpStage = Object.values(apiResourcesOf(template, 'AWS::ApiGatewayV2::Stage', 'HTTP'))[0];
      assert.notEqual(httpStage.Properties.AccessLogSettings.DestinationArn['Fn::GetAtt'][0], group[0]);
      const format: Record<string, string> = JSON.parse(stage.Properties.AccessLogSettings.Format);
      assert.deepEqual(format, {
        requestId: '$context.requestId',
        connectionId: '$context.connectionId',
        eventType: '$context.eventType',
        routeKey: '$context.routeKey',
        status: '$context.status',
        ip: '$context.identity.sourceIp',
        requestTime: '$context.requestTime',
        integrationError: '$context.integration.error',
        error: '$context.error.message',
      });
      // The token travels in the $connect query string: nothing here may carry it.
      for (const variable of Object.values(format)) {
        assert.doesNotMatch(variable, /query|path|\$request\.|\$input|header/i);
      }
    });

    it('the output LiveUrl is the stage\'s wss:// URL, and the display page and the staff page get the same as DISPLAY_LIVE_URL', () => {
      const outputs = template.toJSON().Outputs;
      assert.equal(text(outputs.LiveUrl.Value), liveUrl());
      // display-read serves the display page, call-types the staff page.
      for (const name of ['display-read', 'call-types'] as const) {
        const fn = resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, name)];
        assert.equal(text(fn.Properties.Environment.Variables.DISPLAY_LIVE_URL), liveUrl(), name);
      }
    });
  });

  describe(`${mode}: the connections table`, () => {
    it('scope + connection_id, on-demand, TTL on ttl, the by_connection index (keys only)', () => {
      const table = resourcesOf(template, 'AWS::DynamoDB::Table')[tableId(template, 'connections')];
      const props = table.Properties;
      assert.equal(props.TableName, `nurse-call-test-${mode}-connections`);
      assert.deepEqual(props.KeySchema, [
        { AttributeName: 'scope', KeyType: 'HASH' },
        { AttributeName: 'connection_id', KeyType: 'RANGE' },
      ]);
      assert.deepEqual(
        [...props.AttributeDefinitions].sort((a: Json, b: Json) => a.AttributeName.localeCompare(b.AttributeName)),
        [
          { AttributeName: 'connection_id', AttributeType: 'S' },
          { AttributeName: 'scope', AttributeType: 'S' },
        ],
      );
      assert.equal(props.BillingMode, 'PAY_PER_REQUEST');
      assert.deepEqual(props.TimeToLiveSpecification, { AttributeName: 'ttl', Enabled: true });
      assert.deepEqual(props.GlobalSecondaryIndexes, [
        {
          IndexName: 'by_connection',
          KeySchema: [{ AttributeName: 'connection_id', KeyType: 'HASH' }],
          Projection: { ProjectionType: 'KEYS_ONLY' },
        },
      ]);
      assert.equal(props.StreamSpecification, undefined);
    });

    it(`throwaway: no recovery, no protection, deleted with the stack; ${production ? "encrypted with the installation's key" : 'AWS-owned encryption'}`, () => {
      const table = resourcesOf(template, 'AWS::DynamoDB::Table')[tableId(template, 'connections')];
      assert.equal(table.Properties.PointInTimeRecoverySpecification?.PointInTimeRecoveryEnabled ?? false, false);
      assert.equal(table.Properties.DeletionProtectionEnabled ?? false, false);
      assert.equal(table.DeletionPolicy, 'Delete');
      assert.equal(table.UpdateReplacePolicy, 'Delete');
      if (production) {
        const keyId = Object.keys(resourcesOf(template, 'AWS::KMS::Key'))[0];
        assert.deepEqual(table.Properties.SSESpecification, {
          SSEEnabled: true,
          SSEType: 'KMS',
          KMSMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] },
        });
      } else {
        assert.equal(table.Properties.SSESpecification, undefined);
      }
      // Suppressed with its own reason, not the data tables'.
      const skips: Json[] = table.Metadata.checkov.skip;
      assert.match(skips.find((s) => s.id === 'CKV_AWS_28').comment, /connections.*2 h 10 min/);
    });
  });

  describe(`${mode}: the broadcast's subscription to the data table's stream`, () => {
    it('the data table streams new and old images', () => {
      const data = resourcesOf(template, 'AWS::DynamoDB::Table')[tableId(template, 'data')];
      assert.deepEqual(data.Properties.StreamSpecification, { StreamViewType: 'NEW_AND_OLD_IMAGES' });
    });

    it('one event source mapping: latency first, partial batch failures, bounded retries, bisect, 5 minutes, the filter, the failure queue', () => {
      // The alarm function reads the same stream: alarm-timers.test.ts.
      assert.equal(Object.keys(mappingsOf(template, 'broadcast')).length, 1);
      assert.deepEqual(streamFiltersOf(template, 'broadcast', 'broadcast-failures'), [
        { eventName: ['INSERT', 'MODIFY'], dynamodb: { Keys: { sk: { S: ['call', 'element'] } } } },
        // A rotated or revoked credential's marker (§20): its connections are closed.
        { eventName: ['INSERT'], dynamodb: { Keys: { pk: { S: ['credential#gone'] } } } },
        // A central system's silence begun or ended (§19): consumer.silent, consumer.back.
        { eventName: ['INSERT', 'MODIFY'], dynamodb: { Keys: { pk: { S: ['silence'] } } } },
      ]);
    });

    it('the third filter lets through a silence\'s history item, begun or ended, and the Rust side names its partition so', () => {
      const [, , pattern] = streamFiltersOf(template, 'broadcast', 'broadcast-failures');
      const record = (eventName: string, pk: string) => ({
        eventName,
        dynamodb: { Keys: { pk: { S: pk }, sk: { S: '2026-01-05T09:00:00Z#0d9f3c2a-0000-4000-8000-00000000000c' } } },
      });
      assert.equal(matches(pattern, record('INSERT', 'silence')), true);
      assert.equal(matches(pattern, record('MODIFY', 'silence')), true);
      assert.equal(matches(pattern, record('REMOVE', 'silence')), false);
      assert.equal(matches(pattern, record('INSERT', 'webhook#outbox')), false);
      assert.match(rustSource('store-dynamodb/src/links.rs'), /pub const SILENCE_PK: &str = "silence";/);
      assert.match(rustSource('live-aws/src/change.rs'), /if get_s\(&keys, "pk"\)\.as_deref\(\) == Some\(SILENCE_PK\) \{/);
    });

    it('the second filter lets through a credential marker\'s insert only', () => {
      const [, pattern] = streamFiltersOf(template, 'broadcast', 'broadcast-failures');
      const record = (eventName: string, pk: string) => ({
        eventName,
        dynamodb: { Keys: { pk: { S: pk }, sk: { S: 'staff#0b5e3f0a#1767603600000#0000002a' } } },
      });
      assert.equal(matches(pattern, record('INSERT', 'credential#gone')), true);
      assert.equal(matches(pattern, record('REMOVE', 'credential#gone')), false, 'expired by TTL');
      assert.equal(matches(pattern, record('INSERT', 'staff#installation')), false, 'a roster entry');
    });

    it('the filter lets through new and changed calls and elements only', () => {
      const [pattern] = streamFiltersOf(template, 'broadcast', 'broadcast-failures');
      const record = (eventName: string, sk: string) => ({
        eventName,
        dynamodb: { Keys: { pk: { S: 'installation#Zimmer-101' }, sk: { S: sk } } },
      });
      for (const [eventName, sk, wanted] of [
        ['INSERT', 'call', true], // a call opened
        ['MODIFY', 'call', true], // a call closed
        ['INSERT', 'element', true], // an element created (sandbox)
        ['MODIFY', 'element', true], // an element updated
        ['REMOVE', 'call', false], // expired by TTL
        ['REMOVE', 'element', false],
        ['INSERT', 'open#Normalruf', false], // the open-call lock
        ['INSERT', '00000000000000000042', false], // an open-call index item
        ['INSERT', 'mismatch#1', false], // a sandbox hash mismatch
      ] as const) {
        assert.equal(matches(pattern, record(eventName, sk)), wanted, `${eventName} ${sk}`);
      }
    });

    it('the broadcast: 30 s to post a batch, its log group, the contract\'s environment', () => {
      const fn = resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, 'broadcast')];
      assert.equal(fn.Properties.Timeout, 30);
      assert.deepEqual(environmentOf(template, 'broadcast'), {
        ...commonEnvironment(template, mode),
        CONNECTIONS_TABLE: `{${tableId(template, 'connections')}}`,
        LIVE_MANAGEMENT_ENDPOINT: `https://{${websocket()}}.execute-api.\${AWS::Region}.\${AWS::URLSuffix}/live`,
      });
      // Its DLQ and concurrency findings carry the stream's reasons, not the request path's.
      const skips: Json[] = fn.Metadata.checkov.skip;
      assert.match(skips.find((s) => s.id === 'CKV_AWS_116').comment, /event source mapping/);
      if (production) {
        assert.match(skips.find((s) => s.id === 'CKV_AWS_115').comment, /stream bounds it/);
      }
    });
  });

  describe(`${mode}: the failure queue and the alarms`, () => {
    it(`the queue keeps failure records 14 days, TLS only, ${production ? "encrypted with the installation's key" : 'SQS-managed encryption'}`, () => {
      const queue = resourcesOf(template, 'AWS::SQS::Queue')[queueId(template, 'broadcast-failures')];
      assert.equal(queue.Properties.QueueName, `nurse-call-test-${mode}-broadcast-failures`);
      assert.equal(queue.Properties.MessageRetentionPeriod, 14 * 24 * 3600);
      assertQueuesProtected(template, mode, ['broadcast-failures'], /failed batch metadata/);
    });

    it('alarms: a failure record in the queue, the stream running more than 30 s late, the broadcast\'s throttles and errors; all to the topic', () => {
      const failureQueue = queueId(template, 'broadcast-failures');
      const [topicId] = only(resourcesOf(template, 'AWS::SNS::Topic'), 'topic');
      const alarms = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm'));
      const alarm = (name: string) => {
        const found = alarms.filter((a) => a.Properties.AlarmName === `nurse-call-test-${mode}-${name}`);
        assert.equal(found.length, 1, name);
        assert.deepEqual(found[0].Properties.AlarmActions, [{ Ref: topicId }], name);
        assert.equal(found[0].Properties.TreatMissingData, 'notBreaching', name);
        return found[0].Properties;
      };
      const failures = alarm('broadcast-failures');
      assert.deepEqual(
        {
          namespace: failures.Namespace,
          metric: failures.MetricName,
          dimensions: failures.Dimensions,
          statistic: failures.Statistic,
          comparison: failures.ComparisonOperator,
          threshold: failures.Threshold,
        },
        {
          namespace: 'AWS/SQS',
          metric: 'ApproximateNumberOfMessagesVisible',
          dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [failureQueue, 'QueueName'] } }],
          statistic: 'Maximum',
          comparison: 'GreaterThanOrEqualToThreshold',
          threshold: 1,
        },
      );
      const age = alarm('broadcast-iterator-age');
      assert.deepEqual(
        {
          namespace: age.Namespace,
          metric: age.MetricName,
          dimensions: age.Dimensions,
          statistic: age.Statistic,
          comparison: age.ComparisonOperator,
          threshold: age.Threshold,
        },
        {
          namespace: 'AWS/Lambda',
          metric: 'IteratorAge',
          dimensions: [{ Name: 'FunctionName', Value: functionRef('broadcast') }],
          statistic: 'Maximum',
          comparison: 'GreaterThanThreshold',
          threshold: 30_000,
        },
      );
      for (const name of ['broadcast', 'live-connect', 'display-read']) {
        assert.equal(alarm(`${name}-throttles`).MetricName, 'Throttles');
        assert.equal(alarm(`${name}-errors`).MetricName, 'Errors');
      }
    });
  });

  describe(`${mode}: least privilege of the new functions (every statement of their roles)`, () => {
    const api = () => `{${websocket()}}`;
    const key = production ? ['key'] : [];
    const expected: Record<'display-read' | 'live-connect' | 'broadcast', () => string[]> = {
      'display-read': () => [
        'dynamodb:GetItem, dynamodb:Scan on table consumers',
        'dynamodb:Scan on table call-types',
        'dynamodb:Query on table data, table data/index/by_scope',
        ...key.map(() => `kms:Decrypt, kms:DescribeKey on key if ${DYNAMODB_VIA}`),
      ],
      'live-connect': () => [
        'dynamodb:GetItem on table consumers',
        // The connection, and a staff page's channel item in the roster
        // (DECISIONS §18; CDK merges the two statements).
        'dynamodb:DeleteItem, dynamodb:PutItem on table connections, table data',
        'dynamodb:Query on table connections/index/by_connection',
        ...key.map(() => `kms:Decrypt, kms:DescribeKey, kms:Encrypt, kms:GenerateDataKey on key if ${DYNAMODB_VIA}`),
      ],
      broadcast: () => [
        'dynamodb:Scan on table call-types',
        'dynamodb:DeleteItem, dynamodb:Query on table connections',
        // POST to this API's stage `live`, and DELETE there (a rotated or
        // revoked credential's connections, §20): no GET, no other API or stage.
        `execute-api:ManageConnections on arn:\${AWS::Partition}:execute-api:\${AWS::Region}:\${AWS::AccountId}:${api()}/live/DELETE/@connections/*, arn:\${AWS::Partition}:execute-api:\${AWS::Region}:\${AWS::AccountId}:${api()}/live/POST/@connections/*`,
        `sqs:SendMessage on queue nurse-call-test-${mode}-broadcast-failures`,
        // The event source mapping's stream read (ListStreams has no narrower resource).
        'dynamodb:DescribeStream, dynamodb:GetRecords, dynamodb:GetShardIterator on table data stream',
        'dynamodb:ListStreams on *',
        ...key.flatMap(() => [
          // Its writes, and the stream records (encrypted with the table's
          // key, read through DynamoDB: one statement; infra/lib/data.ts
          // readStream).
          `kms:Decrypt, kms:DescribeKey, kms:Encrypt, kms:GenerateDataKey on key if ${DYNAMODB_VIA}`,
          `kms:Decrypt, kms:GenerateDataKey on key if ${SQS_VIA}`,
        ]),
      ],
    };
    for (const [name, statements] of Object.entries(expected)) {
      it(`${name}: exactly its statements, and only the basic execution role besides (logs)`, () => {
        const fn = name as keyof typeof expected;
        assert.deepEqual(permissionsOf(template, fn), statements().sort());
        assert.deepEqual(managedPoliciesOf(template, fn), [
          'arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole',
        ]);
      });
    }

    it('no other role may manage the WebSocket connections, use the connections table or send to the failure queue', () => {
      for (const name of functionsOf(mode).filter((n) => n !== 'broadcast' && n !== 'live-connect')) {
        const permissions = permissionsOf(template, name).join('\n');
        assert.doesNotMatch(permissions, /execute-api|table connections|broadcast-failures/, name);
        // The alarm function sends to its own queues (alarm-timers.test.ts),
        // the deliver function takes from the delivery queue (deliveries.test.ts),
        // the forward function from the webhook queue (webhooks.test.ts).
        if (name !== 'alarm' && name !== 'deliver' && name !== 'forward') {
          assert.doesNotMatch(permissions, /sqs:/, name);
        }
      }
    });
  });

  describe(`${mode}: the live-connect function`, () => {
    it('the contract\'s environment, the request path\'s timeout', () => {
      const fn = resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, 'live-connect')];
      assert.equal(fn.Properties.Timeout, 10);
      assert.deepEqual(environmentOf(template, 'live-connect'), {
        ...commonEnvironment(template, mode),
        CONNECTIONS_TABLE: `{${tableId(template, 'connections')}}`,
      });
    });
  });

  describe(`${mode}: the display-read function`, () => {
    it('GET /api/v1/display/calls, /api/v1/display/elements and the page /display, on its own function', () => {
      const routes = routesOf(template);
      for (const path of ['/api/v1/display/calls', '/api/v1/display/elements', '/display']) {
        assert.equal(routes[`ANY ${path}`], 'display-read', path);
      }
      assert.deepEqual(
        Object.entries(routes)
          .filter(([, fn]) => fn === 'display-read')
          .map(([route]) => route)
          .sort(),
        ['ANY /api/v1/display/calls', 'ANY /api/v1/display/elements', 'ANY /display'],
      );
    });

    it('the request path\'s environment plus DISPLAY_LIVE_URL', () => {
      assert.deepEqual(environmentOf(template, 'display-read'), {
        ...commonEnvironment(template, mode),
        CALL_RETENTION_DAYS: '400',
        DISPLAY_LIVE_URL: liveUrl(),
      });
    });
  });
}
