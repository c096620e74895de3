/**
 * Live delivery in AWS (DECISIONS §11): displays connect to an API Gateway
 * WebSocket API, and every change to calls and elements reaches them through
 * the data table's stream and the broadcast function. Same messages and the
 * same page as the local server; only the transport behind them differs.
 *
 *   display ══wss══▶ WebSocket API, stage `live`
 *                      $connect, $disconnect ─▶ live-connect ─▶ connections table
 *                      ping ─▶ MOCK integration, answers {"type":"pong"}
 *   a write ─▶ data table ─stream─▶ broadcast ─POST @connections─▶ each display of the scope
 *                                      └ failed batches ─▶ SQS queue (alarmed)
 *
 * The stack creates the two functions like every other one (runtime, logs:
 * infra/lib/functions.ts; least privilege: infra/lib/access.ts) and hands
 * them to {@link Live.routeConnections} and {@link Live.subscribe}.
 */
import { RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketLambdaIntegration, WebSocketMockIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

import { CHECKOV, skipCheckov } from './checkov';
import { readStream } from './data';
import { ALARM_PERIOD, AT_LEAST_ONCE } from './metric-alarms';
import { DEAD_LETTER_RETENTION, encryptedQueue, messagesAlarm } from './queues';

/** The WebSocket stage; its URL is `wss://<api>.execute-api.<region>.amazonaws.com/live`. */
export const LIVE_STAGE = 'live';

/** The connections table's index from a connection id to its item (the `$disconnect` lookup). */
export const BY_CONNECTION_INDEX = 'by_connection';

/**
 * The records the broadcast function is invoked for: new and changed calls
 * and elements. Open-call locks, index items, hash mismatches and deletions
 * (a call's close is a MODIFY of its `call` item; TTL deletions are no news)
 * are filtered out by Lambda before they cost an invocation.
 */
export const BROADCAST_FILTER = {
  eventName: ['INSERT', 'MODIFY'],
  dynamodb: { Keys: { sk: { S: ['call', 'element'] } } },
};

/**
 * And a credential that stopped working: the marker item `staff rotate`,
 * `revoke`, `erase` and `displays rotate`, `revoke` put (partition
 * `credential#gone`, functions/store-dynamodb/src/credentials_gone.rs),
 * whose holder's connections the broadcast closes (DECISIONS §20).
 */
export const CREDENTIAL_GONE_FILTER = {
  eventName: ['INSERT'],
  dynamodb: { Keys: { pk: { S: ['credential#gone'] } } },
};

/**
 * And a central system's silence (DECISIONS §19): its history item
 * inserted (`consumer.silent`) or modified (its end: `consumer.back`),
 * partition `silence` (`SILENCE_PK` of functions/store-dynamodb/src/links.rs).
 */
export const SILENCE_FILTER = {
  eventName: ['INSERT', 'MODIFY'],
  dynamodb: { Keys: { pk: { S: ['silence'] } } },
};

/** The broadcast's iterator age (ms) above which displays are late enough to alarm. */
export const ITERATOR_AGE_ALARM_MS = 30_000;

export interface LiveProps {
  /** The installation's name: `nurse-call-<installation>-connections`, alarm names. */
  readonly installation: string;
  /** The installation's key (production): the connections table and the failure queue. */
  readonly key?: kms.IKey;
  /** Throttling of the WebSocket stage (connects and messages). */
  readonly throttle: apigwv2.ThrottleSettings;
  /** Where the stage writes its access logs. */
  readonly accessLogs: logs.ILogGroup;
}

export class Live extends Construct {
  /** Who is connected: one item per open WebSocket connection. */
  readonly connections: dynamodb.Table;
  readonly api: apigwv2.WebSocketApi;
  readonly stage: apigwv2.WebSocketStage;
  /** The broadcast's on-failure destination: a record of each batch it gave up on. */
  readonly failures: sqs.Queue;
  private readonly installation: string;

  constructor(scope: Construct, id: string, props: LiveProps) {
    super(scope, id);
    const { installation, key } = props;
    this.installation = installation;

    // --- Connections (the contract of issue 13): partition `scope`
    // (`installation` or a sandbox consumer's id), sort `connection_id`.
    // API Gateway closes a connection after 2 h at the latest; the item's
    // `ttl` (connect time + 2 h 10 min) removes what a lost $disconnect
    // left behind. Throwaway by nature (a display reconnects and is recorded
    // again): no point-in-time recovery, no protection, deleted with the stack.
    this.connections = new dynamodb.Table(this, 'ConnectionsTable', {
      tableName: `nurse-call-${installation}-connections`,
      partitionKey: { name: 'scope', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'connection_id', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: 'ttl',
      removalPolicy: RemovalPolicy.DESTROY,
      ...(key ? { encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED, encryptionKey: key } : {}),
    });
    this.connections.addGlobalSecondaryIndex({
      indexName: BY_CONNECTION_INDEX,
      partitionKey: { name: 'connection_id', type: dynamodb.AttributeType.STRING },
      projectionType: dynamodb.ProjectionType.KEYS_ONLY,
    });
    skipCheckov(this.connections, CHECKOV.connectionsRecovery, ...(key ? [] : [CHECKOV.sandboxTableKey]));

    // --- The WebSocket API. Clients send `{"action":"ping"}`: the route is
    // chosen by the body's `action`.
    this.api = new apigwv2.WebSocketApi(this, 'Api', {
      apiName: `nurse-call-${installation}-live`,
      description: `nurse-call ${installation}: live messages for displays (DECISIONS §11)`,
      routeSelectionExpression: '$request.body.action',
    });

    // `ping` is answered by API Gateway itself, no Lambda: a MOCK
    // integration returns the status code its request template produces
    // (`{"statusCode":200}`; the template selection expression `\$default`
    // evaluates to the key `$default`, so that template is always the one),
    // its integration response (key `$default`: whatever the status) maps the
    // answer through the template `{"type":"pong"}`, and the route response
    // (`$default`; `returnResponse` also sets the route's response selection
    // expression) makes the route two-way, so the pong goes back on the
    // socket. Without the route response API Gateway would send nothing.
    const ping = this.api.addRoute('ping', {
      integration: new WebSocketMockIntegration('PingIntegration', {
        requestTemplates: { $default: JSON.stringify({ statusCode: 200 }) },
        templateSelectionExpression: '\\$default',
      }),
      returnResponse: true,
    });
    // WebSocketRouteIntegration creates its integration inside the route.
    const pingIntegration = ping.node.tryFindChild('PingIntegration');
    if (!(pingIntegration instanceof apigwv2.WebSocketIntegration)) {
      throw new Error('the ping route has no integration where the CDK used to put it');
    }
    new apigwv2.CfnIntegrationResponse(this, 'PongResponse', {
      apiId: this.api.apiId,
      integrationId: pingIntegration.integrationId,
      integrationResponseKey: '$default',
      templateSelectionExpression: '\\$default',
      responseTemplates: { $default: JSON.stringify({ type: 'pong' }) },
    });

    // The token travels in the $connect query string (browsers cannot set
    // headers on a WebSocket): the access log names the connection and the
    // route, never the query string (no `$context` variable here carries it).
    // Unlike an HTTP API's, a WebSocket stage logs through the account's API
    // Gateway CloudWatch role, an account-wide setting the stack leaves
    // alone (docs/deploy.md, Prerequisites).
    this.stage = new apigwv2.WebSocketStage(this, 'Stage', {
      webSocketApi: this.api,
      stageName: LIVE_STAGE,
      autoDeploy: true,
      throttle: props.throttle,
      accessLogSettings: {
        destination: new apigwv2.LogGroupLogDestination(props.accessLogs),
        format: apigw.AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            connectionId: '$context.connectionId',
            eventType: '$context.eventType',
            routeKey: '$context.routeKey',
            status: '$context.status',
            ip: '$context.identity.sourceIp',
            requestTime: '$context.requestTime',
            integrationError: '$context.integration.error',
            error: '$context.error.message',
          }),
        ),
      },
    });

    // --- What the broadcast gave up on (retries spent, record too old):
    // Lambda sends a record of the batch (shard, sequence numbers, no item
    // data) here. Encrypted: in production with the installation's key,
    // which the broadcast role may use through SQS (the stack grants it;
    // Lambda sends with the function's role, so the key policy, which leaves
    // the account's principals to IAM, needs nothing more); in a sandbox
    // with SQS-managed keys. Kept 14 days (the most SQS allows), deleted
    // with the stack: the records name no care data and point at a stream
    // that keeps records 24 h only.
    this.failures = encryptedQueue(this, 'BroadcastFailures', {
      name: `nurse-call-${installation}-broadcast-failures`,
      retention: DEAD_LETTER_RETENTION,
      key,
      sandboxKey: CHECKOV.sandboxQueueKey,
    });
  }

  /** The URL displays connect to (`wss://…/live`): the page's `DISPLAY_LIVE_URL`. */
  get url(): string {
    return this.stage.url;
  }

  /** The management API the broadcast posts to (`https://…/live`). */
  get managementEndpoint(): string {
    return this.stage.callbackUrl;
  }

  /** Posting to this stage's connections, and nothing else (no GET, no DELETE, no other API or stage). */
  get postToConnectionsArn(): string {
    return Stack.of(this).formatArn({
      service: 'execute-api',
      resource: this.api.apiId,
      resourceName: `${LIVE_STAGE}/POST/@connections/*`,
    });
  }

  /**
   * Closing this stage's connections (`DELETE /@connections/{id}`): the
   * broadcast closes those of a rotated or revoked credential (DECISIONS
   * §20). No GET, no other API or stage.
   */
  get closeConnectionsArn(): string {
    return Stack.of(this).formatArn({
      service: 'execute-api',
      resource: this.api.apiId,
      resourceName: `${LIVE_STAGE}/DELETE/@connections/*`,
    });
  }

  /**
   * `$connect` and `$disconnect` invoke `fn` (Lambda proxy): it checks the
   * token and records the connection, or removes it. A `$connect` answered
   * with a status other than 2xx refuses the upgrade.
   */
  routeConnections(fn: lambda.IFunction): void {
    // One integration for both routes; each route gets its own permission
    // to invoke the function (source `<api>/*<route>`).
    const integration = new WebSocketLambdaIntegration('LiveConnectIntegration', fn);
    this.api.addRoute('$connect', { integration });
    this.api.addRoute('$disconnect', { integration });
  }

  /**
   * Subscribes `fn` to the data table's stream, for latency: every record as
   * soon as it is there (batching window 0 s, up to 100 per batch). A record
   * that fails is retried by itself (partial batch response, bisect on
   * error), at most 3 times and for at most 5 minutes (a display re-reads
   * every 60 s anyway), then reported to the failure queue. Returns the
   * alarms: something in the failure queue, and the stream running late.
   */
  subscribe(fn: lambda.Function, data: dynamodb.ITable): cloudwatch.Alarm[] {
    readStream(fn, data, { filters: [BROADCAST_FILTER, CREDENTIAL_GONE_FILTER, SILENCE_FILTER], failures: this.failures });

    return [
      messagesAlarm(this, 'BroadcastFailuresAlarm', this.failures, {
        alarmName: `nurse-call-${this.installation}-broadcast-failures`,
        alarmDescription:
          'The broadcast gave up on stream records (retries or 5 minutes spent): displays missed live messages until their next re-read; the queue holds which',
      }),
      fn.metric('IteratorAge', { period: ALARM_PERIOD, statistic: 'Maximum' }).createAlarm(this, 'BroadcastIteratorAgeAlarm', {
        alarmName: `nurse-call-${this.installation}-broadcast-iterator-age`,
        alarmDescription: `The broadcast reached a stream record more than ${ITERATOR_AGE_ALARM_MS / 1000} s after its write: displays are late`,
        ...AT_LEAST_ONCE,
        threshold: ITERATOR_AGE_ALARM_MS,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      }),
    ];
  }
}
