import * as fs from 'node:fs';
import * as path from 'node:path';

import { CfnOutput, Duration, RemovalPolicy, Stack, StackProps } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import * as cr from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';

import { DEFAULT_CALL_TYPES, callTypeItem } from './call-types';
import { CHECKOV, skipCheckov } from './checkov';
import { BY_CONNECTION_INDEX, Live } from './live';

/** `production`, or `sandbox` (the test server of spec 5.3), DECISIONS §1. */
export type ServiceMode = 'production' | 'sandbox';

export interface NurseCallStackProps extends StackProps {
  /**
   * The installation's name (a care home, a hospital): lowercase letters,
   * digits and hyphens. Table names are `nurse-call-<installation>-…`.
   */
  readonly installation: string;
  /** Set at deploy time; a request never chooses it. */
  readonly mode: ServiceMode;
  /** IANA zone of the times on the wire. @default Europe/Berlin */
  readonly timeZone?: string;
  /** Steady-state requests per second of each API stage (HTTP, and WebSocket: connects and messages). @default 50 */
  readonly throttleRateLimit?: number;
  /** Burst of each API stage (requests). @default 100 */
  readonly throttleBurstLimit?: number;
  /** Memory of each function in MB. @default 256 */
  readonly lambdaMemoryMb?: number;
  /** Timeout of each function but the broadcast ({@link BROADCAST_TIMEOUT}). @default 10 seconds */
  readonly lambdaTimeout?: Duration;
  /**
   * The folder of the cargo-lambda output: `<lambdaDir>/<function>/bootstrap.zip`
   * (`scripts/build-lambdas` writes `target/lambda/`).
   */
  readonly lambdaDir: string;
  /** Retention of the function and access logs. @default 3 months (production), 2 weeks (sandbox) */
  readonly logRetention?: logs.RetentionDays;
  /** Share of API requests answered 5xx (percent, per 5 minutes) that raises the alarm. @default 5 */
  readonly api5xxRatePercent?: number;
  /** Where alarms are mailed (an SNS topic is created); none when unset. */
  readonly alarmEmail?: string;
  /**
   * Days a call is kept after it was opened; older calls are deleted
   * (DynamoDB TTL on the data table's `ttl`). The care home's decision,
   * passed to every function as CALL_RETENTION_DAYS. @default 400
   */
  readonly callRetentionDays?: number;
  /**
   * Sandbox stacks only: reserved concurrency of each function. A public
   * test server must neither run up the bill nor starve the account's
   * other functions of concurrency. @default 5
   */
  readonly sandboxReservedConcurrency?: number;
}

/** The Lambda functions: cargo-lambda's output folder names (scripts/build-lambdas). */
export type FunctionName =
  | 'display'
  | 'display-read'
  | 'element'
  | 'call-types'
  | 'sandbox'
  | 'live-connect'
  | 'broadcast';

/**
 * The HTTP API routes of each function (DECISIONS §8, §11, spec 4).
 * live-connect serves the WebSocket API's `$connect` and `$disconnect`, and
 * broadcast the data table's stream (infra/lib/live.ts): no HTTP routes.
 */
export const ROUTES: Record<FunctionName, string[]> = {
  display: ['/api/v1/display'],
  'display-read': ['/api/v1/display/calls', '/api/v1/display/elements', '/display'],
  element: ['/api/v1/element'],
  'call-types': ['/api/v1/display/call-types', '/api/v1/openapi.json'],
  sandbox: ['/', '/api/v1/sandbox/consumers', '/api/v1/sandbox/state'],
  'live-connect': [],
  broadcast: [],
};

/** The functions of a stack in `mode`: the sandbox function only in sandbox stacks. */
export function functionsOf(mode: ServiceMode): FunctionName[] {
  return [
    'display',
    'display-read',
    'element',
    'call-types',
    ...(mode === 'sandbox' ? (['sandbox'] as const) : []),
    'live-connect',
    'broadcast',
  ];
}

/** The functions behind HTTP API routes: the request path (they get CALL_RETENTION_DAYS). */
export function httpFunctionsOf(mode: ServiceMode): FunctionName[] {
  return functionsOf(mode).filter((name) => ROUTES[name].length > 0);
}

/**
 * The broadcast's timeout: a batch of up to 100 stream records, each posted
 * to every connection of its scope. A timed-out batch is retried (split in
 * two), so this bounds how long a stuck batch holds up its shard.
 */
export const BROADCAST_TIMEOUT = Duration.seconds(30);

const INSTALLATION = /^[a-z][a-z0-9-]{0,39}$/;

/** The name of the global secondary index of the data table (docs/data-model.md). */
export const BY_SCOPE_INDEX = 'by_scope';

/** CALL_RETENTION_DAYS when the props do not say (DECISIONS §10, docs/security.md). */
export const DEFAULT_CALL_RETENTION_DAYS = 400;

/** The DynamoDB actions that write (and so need the key to encrypt). */
const DYNAMODB_WRITES = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'];

/** The construct id of AwsCustomResource's provider function (aws-cdk-lib/custom-resources). */
const SEEDING_PROVIDER_ID = 'AWS679f53fac002430cb0da5b7982bd2287';

/** Reserved concurrency of each sandbox function when the props do not say. */
export const DEFAULT_SANDBOX_RESERVED_CONCURRENCY = 5;

/**
 * One installation: the HTTP API, one Lambda function per endpoint family,
 * the three DynamoDB tables of docs/data-model.md, the displays' live
 * delivery (infra/lib/live.ts), alarms, and the seeded call types.
 */
export class NurseCallStack extends Stack {
  readonly api: apigwv2.HttpApi;
  readonly stage: apigwv2.HttpStage;
  readonly functions: Partial<Record<FunctionName, lambda.Function>> = {};
  readonly tables: { callTypes: dynamodb.Table; consumers: dynamodb.Table; data: dynamodb.Table };
  /** The installation's key (production only). */
  readonly key?: kms.Key;
  /** The displays' live delivery: WebSocket API, connections, stream subscription. */
  readonly live: Live;

  constructor(scope: Construct, id: string, props: NurseCallStackProps) {
    super(scope, id, props);
    const { installation, mode } = props;
    if (!INSTALLATION.test(installation)) {
      throw new Error(
        `installation ${JSON.stringify(installation)}: expected lowercase letters, digits and hyphens, starting with a letter, at most 40 characters`,
      );
    }
    if (mode !== 'production' && mode !== 'sandbox') {
      throw new Error(`mode ${JSON.stringify(mode)}: expected "production" or "sandbox"`);
    }
    const timeZone = props.timeZone ?? 'Europe/Berlin';
    checkTimeZone(timeZone);
    const production = mode === 'production';
    const callRetentionDays = props.callRetentionDays ?? DEFAULT_CALL_RETENTION_DAYS;
    if (!Number.isSafeInteger(callRetentionDays) || callRetentionDays < 1) {
      throw new Error(`callRetentionDays ${callRetentionDays}: expected a whole number of days, at least 1`);
    }
    if (production && props.sandboxReservedConcurrency !== undefined) {
      throw new Error('sandboxReservedConcurrency applies to sandbox stacks only');
    }
    const reservedConcurrency = props.sandboxReservedConcurrency ?? DEFAULT_SANDBOX_RESERVED_CONCURRENCY;
    if (!Number.isSafeInteger(reservedConcurrency) || reservedConcurrency < 1) {
      throw new Error(`sandboxReservedConcurrency ${reservedConcurrency}: expected a whole number, at least 1`);
    }
    const prefix = `nurse-call-${installation}-`;
    const logRetention =
      props.logRetention ?? (production ? logs.RetentionDays.THREE_MONTHS : logs.RetentionDays.TWO_WEEKS);
    // The function logs name the address and event of every call opened or
    // closed: they must not keep calls longer than the care home allows.
    if (logRetention > callRetentionDays) {
      throw new Error(
        `logRetention ${logRetention === logs.RetentionDays.INFINITE ? 'INFINITE' : `${logRetention} days`} outlasts callRetentionDays ${callRetentionDays}: the logs would keep calls longer than the care home allows; set logRetention to at most ${callRetentionDays} days`,
      );
    }
    // Logs outlive a deleted production stack; a sandbox leaves nothing behind.
    const logRemoval = production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;

    // --- The installation's key (production only): the tables, the log
    // groups, the alarm topic and the broadcast's failure queue are encrypted with it, so reading a table
    // takes an IAM permission on this key as well as on the table, CloudTrail
    // records every use of it, and disabling it makes the data, its backups
    // and the logs unreadable at once. KMS rotates it yearly. It outlives a
    // deleted stack like the tables and logs it protects.
    // A sandbox keeps the AWS-owned encryption: its data is throwaway test
    // data that expires after 30 days, and a key costs a monthly fee plus
    // requests for nothing worth protecting.
    this.key = production
      ? new kms.Key(this, 'DataKey', {
          description: `nurse-call ${installation}: the tables, the log groups, the alarm topic and the broadcast failure queue`,
          alias: `alias/nurse-call-${installation}`,
          enableKeyRotation: true,
          removalPolicy: RemovalPolicy.RETAIN,
        })
      : undefined;
    const key = this.key;
    // CloudWatch Logs of this region uses the key for the log groups of this
    // account (the encryption context names the log group).
    key?.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'LogGroupsOfThisAccount',
        principals: [new iam.ServicePrincipal(`logs.${this.region}.amazonaws.com`)],
        actions: ['kms:Encrypt*', 'kms:Decrypt*', 'kms:ReEncrypt*', 'kms:GenerateDataKey*', 'kms:Describe*'],
        resources: ['*'],
        conditions: {
          ArnLike: {
            'kms:EncryptionContext:aws:logs:arn': `arn:${this.partition}:logs:${this.region}:${this.account}:log-group:*`,
          },
        },
      }),
    );

    // --- Tables (docs/data-model.md). Production keeps its data: point-in-time
    // recovery, deletion protection, retained when the stack goes, encrypted
    // with the installation's key. A sandbox stack is destroyable as a whole.
    const tableSettings = {
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: production },
      deletionProtection: production,
      removalPolicy: production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
      ...(key ? { encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED, encryptionKey: key } : {}),
    };
    const callTypes = new dynamodb.Table(this, 'CallTypesTable', {
      ...tableSettings,
      tableName: `${prefix}call-types`,
      partitionKey: { name: 'name', type: dynamodb.AttributeType.STRING },
    });
    const consumers = new dynamodb.Table(this, 'ConsumersTable', {
      ...tableSettings,
      tableName: `${prefix}consumers`,
      partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING },
      timeToLiveAttribute: 'ttl',
    });
    const data = new dynamodb.Table(this, 'DataTable', {
      ...tableSettings,
      tableName: `${prefix}data`,
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
      timeToLiveAttribute: 'ttl',
      // Every change, before and after, for the broadcast (infra/lib/live.ts).
      stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
    });
    data.addGlobalSecondaryIndex({
      indexName: BY_SCOPE_INDEX,
      partitionKey: { name: 'list_pk', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'list_sk', type: dynamodb.AttributeType.STRING },
      projectionType: dynamodb.ProjectionType.ALL,
    });
    this.tables = { callTypes, consumers, data };
    if (!production) {
      for (const table of [callTypes, consumers, data]) {
        skipCheckov(table, CHECKOV.sandboxTableKey, CHECKOV.sandboxRecovery);
      }
    }

    // Every log group: the stack's retention; in production encrypted with
    // the installation's key.
    const logGroup = (id: string, removalPolicy: RemovalPolicy): logs.LogGroup => {
      const group = new logs.LogGroup(this, id, { retention: logRetention, removalPolicy, encryptionKey: key });
      if (!key) {
        skipCheckov(group, CHECKOV.sandboxLogKey);
      }
      return group;
    };
    const throttle = {
      rateLimit: props.throttleRateLimit ?? 50,
      burstLimit: props.throttleBurstLimit ?? 100,
    };

    // --- Live delivery (DECISIONS §11, infra/lib/live.ts): the WebSocket
    // API, the connections table, the failure queue; the functions below
    // are wired into it once they exist.
    this.live = new Live(this, 'Live', {
      installation,
      key,
      throttle,
      accessLogs: logGroup('LiveAccessLogs', logRemoval),
    });
    const connections = this.live.connections;

    // --- Functions. Least privilege: exactly the actions each one's code
    // issues (functions/store-dynamodb/src/ and the live functions of the
    // contract of issue 13). TransactWriteItems has no IAM action of its
    // own; it needs the action of each item in it.
    const byScopeArn = `${data.tableArn}/index/${BY_SCOPE_INDEX}`;
    const byConnectionArn = `${connections.tableArn}/index/${BY_CONNECTION_INDEX}`;
    const access: Record<FunctionName, iam.PolicyStatementProps[]> = {
      // authenticate; call types; snapshot (Query pk), open (TransactWriteItems:
      // Put lock + Put call + Update element; GetItem of the existing lock),
      // re-open (UpdateItem), close (TransactWriteItems: Update + Delete). In
      // sandbox stacks also a consumer's hash mismatches for the test page
      // (PutItem, Query, DeleteItem: already covered).
      display: [
        { actions: ['dynamodb:GetItem'], resources: [consumers.tableArn] },
        { actions: ['dynamodb:Scan'], resources: [callTypes.tableArn] },
        {
          actions: [
            'dynamodb:Query',
            'dynamodb:GetItem',
            'dynamodb:PutItem',
            'dynamodb:UpdateItem',
            'dynamodb:DeleteItem',
          ],
          resources: [data.tableArn],
        },
      ],
      // the display by its token's hash (GetItem; in sandbox stacks also the
      // test page's consumer, for its cookie); call types to sort and
      // describe the calls; the open calls from the scope's open-call index
      // partition (Query), the elements from the by_scope index (Query).
      'display-read': [
        { actions: ['dynamodb:GetItem'], resources: [consumers.tableArn] },
        { actions: ['dynamodb:Scan'], resources: [callTypes.tableArn] },
        { actions: ['dynamodb:Query'], resources: [data.tableArn, byScopeArn] },
      ],
      // authenticate; single form UpdateItem, multi form TransactWriteItems of
      // Updates, then BatchGetItem of the elements.
      element: [
        { actions: ['dynamodb:GetItem'], resources: [consumers.tableArn] },
        {
          actions: [
            'dynamodb:UpdateItem',
            'dynamodb:BatchGetItem',
            // Sandbox stacks only: a consumer's hash mismatches for the test
            // page (put, read the partition's keys, delete the oldest).
            ...(production ? [] : ['dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:DeleteItem']),
          ],
          resources: [data.tableArn],
        },
      ],
      'call-types': [{ actions: ['dynamodb:Scan'], resources: [callTypes.tableArn] }],
      // the page's consumer (GetItem, PutItem); call types for the page and the
      // records; the lists from the by_scope index, the hash mismatches from
      // their partition of the data table (Query only, no writes).
      sandbox: [
        { actions: ['dynamodb:GetItem', 'dynamodb:PutItem'], resources: [consumers.tableArn] },
        { actions: ['dynamodb:Scan'], resources: [callTypes.tableArn] },
        { actions: ['dynamodb:Query'], resources: [data.tableArn, byScopeArn] },
      ],
      // $connect: the display by its token's hash, or in sandbox stacks the
      // visitor's consumer (GetItem); records the connection (PutItem).
      // $disconnect: finds the connection's scope (Query of by_connection),
      // removes it (DeleteItem).
      'live-connect': [
        { actions: ['dynamodb:GetItem'], resources: [consumers.tableArn] },
        { actions: ['dynamodb:PutItem', 'dynamodb:DeleteItem'], resources: [connections.tableArn] },
        { actions: ['dynamodb:Query'], resources: [byConnectionArn] },
      ],
      // call types for the call records; the scope's connections (Query),
      // a gone one removed (DeleteItem); posts to this API's connections
      // only; failed batches to its queue (the stream read itself is granted
      // by the event source mapping: infra/lib/live.ts).
      broadcast: [
        { actions: ['dynamodb:Scan'], resources: [callTypes.tableArn] },
        { actions: ['dynamodb:Query', 'dynamodb:DeleteItem'], resources: [connections.tableArn] },
        { actions: ['execute-api:ManageConnections'], resources: [this.live.postToConnectionsArn] },
        { actions: ['sqs:SendMessage'], resources: [this.live.failures.queueArn] },
        // Sending to a queue encrypted with the installation's key: a data
        // key for the message, through SQS only.
        ...(key
          ? [
              {
                actions: ['kms:GenerateDataKey', 'kms:Decrypt'],
                resources: [key.keyArn],
                conditions: { StringEquals: { 'kms:ViaService': `sqs.${this.region}.amazonaws.com` } },
              },
            ]
          : []),
      ],
    };

    // With the installation's key, DynamoDB uses it on behalf of the caller:
    // each function may use it through DynamoDB only (kms:ViaService), to
    // decrypt when it only reads, to encrypt too when it writes.
    const keyAccess = (statements: iam.PolicyStatementProps[]): iam.PolicyStatementProps[] => {
      if (!key) {
        return [];
      }
      const writes = statements.some((statement) =>
        (statement.actions ?? []).some((action) => DYNAMODB_WRITES.includes(action)),
      );
      return [
        {
          actions: ['kms:Decrypt', 'kms:DescribeKey', ...(writes ? ['kms:Encrypt', 'kms:GenerateDataKey'] : [])],
          resources: [key.keyArn],
          conditions: { StringEquals: { 'kms:ViaService': `dynamodb.${this.region}.amazonaws.com` } },
        },
      ];
    };

    // Environment (DECISIONS §10): what every function reads, plus each
    // one's own. The request path's functions keep calls for
    // CALL_RETENTION_DAYS; the live functions write no calls.
    const common = {
      SERVICE_MODE: mode,
      SERVICE_TIME_ZONE: timeZone,
      CALL_TYPES_TABLE: callTypes.tableName,
      CONSUMERS_TABLE: consumers.tableName,
      DATA_TABLE: data.tableName,
    };
    const requestPath = { ...common, CALL_RETENTION_DAYS: String(callRetentionDays), RUST_LOG: 'info' };
    const environments: Record<FunctionName, Record<string, string>> = {
      display: requestPath,
      'display-read': { ...requestPath, DISPLAY_LIVE_URL: this.live.url },
      element: requestPath,
      'call-types': requestPath,
      sandbox: requestPath,
      'live-connect': { ...common, CONNECTIONS_TABLE: connections.tableName, RUST_LOG: 'info' },
      broadcast: {
        ...common,
        CONNECTIONS_TABLE: connections.tableName,
        LIVE_MANAGEMENT_ENDPOINT: this.live.managementEndpoint,
        RUST_LOG: 'info',
      },
    };
    const descriptions: Record<FunctionName, string> = {
      display: 'POST /api/v1/display: open and close calls',
      'display-read': 'GET /api/v1/display/calls, /api/v1/display/elements and the display page /display',
      element: 'POST /api/v1/element: element status',
      'call-types': 'GET /api/v1/display/call-types, and the 404 of unknown paths',
      sandbox: 'Test server: GET /, /api/v1/sandbox/consumers, /api/v1/sandbox/state',
      'live-connect': 'WebSocket $connect (checks the display token, records the connection) and $disconnect',
      broadcast: "The data table's stream: each change of a call or element to the displays connected",
    };

    for (const name of functionsOf(mode)) {
      const id = pascal(name);
      const zip = path.join(props.lambdaDir, name, 'bootstrap.zip');
      if (!fs.existsSync(zip)) {
        throw new Error(`${zip} is missing: build the functions first (scripts/build-lambdas)`);
      }
      const stream = name === 'broadcast';
      const fn = new lambda.Function(this, `${id}Function`, {
        description: `nurse-call ${installation} (${mode}): ${descriptions[name]}`,
        // The cargo-lambda build: a `bootstrap` executable for Graviton
        // (linked against glibc 2.30 at most; Amazon Linux 2023 has 2.34).
        runtime: lambda.Runtime.PROVIDED_AL2023,
        architecture: lambda.Architecture.ARM_64,
        handler: 'bootstrap',
        code: lambda.Code.fromAsset(zip),
        // Memory also buys CPU. The work per request is small (JSON, one
        // HMAC, 1-3 DynamoDB round trips), but a cold start sets up TLS to
        // DynamoDB, which 128 MB makes noticeably slower; 256 MB keeps cold
        // starts short at a small price. Per installation in props.
        memorySize: props.lambdaMemoryMb ?? 256,
        // The SDK gives up on one DynamoDB operation after 4 s (3 attempts
        // of 1.5 s) and the handler then answers 503 with Retry-After. 10 s
        // is above that: room for a cold start plus one slow and one failing
        // operation, so the client gets the documented 503 and not a bare
        // API Gateway error from a killed invocation. The broadcast answers
        // no client: BROADCAST_TIMEOUT.
        timeout: stream ? BROADCAST_TIMEOUT : (props.lambdaTimeout ?? Duration.seconds(10)),
        // A public test server must neither run up the bill nor take the
        // account's concurrency from other functions; production is bounded
        // by the stages' throttling and the stream's shards instead (a cap
        // there refuses real calls or delays displays).
        reservedConcurrentExecutions: production ? undefined : reservedConcurrency,
        environment: environments[name],
        logGroup: logGroup(`${id}Logs`, logRemoval),
      });
      for (const statement of [...access[name], ...keyAccess(access[name])]) {
        fn.addToRolePolicy(new iam.PolicyStatement(statement));
      }
      skipCheckov(fn, CHECKOV.noVpc, stream ? CHECKOV.streamDlq : CHECKOV.noDlq, CHECKOV.plainEnvironment);
      if (production) {
        skipCheckov(fn, stream ? CHECKOV.streamCapInProduction : CHECKOV.noCapInProduction);
      }
      this.functions[name] = fn;
    }
    const fns = this.functions as Record<FunctionName, lambda.Function>;
    this.live.routeConnections(fns['live-connect']);
    const liveAlarms = this.live.subscribe(fns.broadcast, data);

    // --- API: exactly the routes of the spec (plus the sandbox's in sandbox
    // mode). `ANY` so that a wrong method reaches the function, which answers
    // the documented 405; everything else reaches the call-types function,
    // which answers the documented 404.
    this.api = new apigwv2.HttpApi(this, 'Api', {
      apiName: `nurse-call-${installation}`,
      description: `nurse-call ${installation} (${mode})`,
      createDefaultStage: false,
      defaultIntegration: new HttpLambdaIntegration('DefaultIntegration', fns['call-types']),
    });
    for (const name of httpFunctionsOf(mode)) {
      const integration = new HttpLambdaIntegration(`${pascal(name)}Integration`, fns[name]);
      for (const routePath of ROUTES[name]) {
        this.api.addRoutes({ path: routePath, methods: [apigwv2.HttpMethod.ANY], integration });
      }
    }
    const accessLogs = logGroup('ApiAccessLogs', logRemoval);
    this.stage = this.api.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      throttle,
      // `$context.path` is the path alone: the query string is never logged.
      accessLogSettings: {
        destination: new apigwv2.LogGroupLogDestination(accessLogs),
        format: apigw.AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            time: '$context.requestTime',
            ip: '$context.identity.sourceIp',
            method: '$context.httpMethod',
            path: '$context.path',
            route: '$context.routeKey',
            status: '$context.status',
            responseLength: '$context.responseLength',
            latency: '$context.responseLatency',
            integrationLatency: '$context.integrationLatency',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });

    // --- Seed the call types, once: only when the stack is created
    // (onCreate, no onUpdate), and each put is conditional on the name being
    // new, so an admin's edit is never overwritten.
    const seedLogs = logGroup('SeedCallTypesLogs', RemovalPolicy.DESTROY);
    const seedAccess: iam.PolicyStatementProps[] = [{ actions: ['dynamodb:PutItem'], resources: [callTypes.tableArn] }];
    for (const callType of DEFAULT_CALL_TYPES) {
      new cr.AwsCustomResource(this, `SeedCallType${callType.id}`, {
        resourceType: 'Custom::SeedCallType',
        installLatestAwsSdk: false,
        logGroup: seedLogs,
        onCreate: {
          service: 'DynamoDB',
          action: 'putItem',
          parameters: {
            TableName: callTypes.tableName,
            Item: callTypeItem(callType),
            ConditionExpression: 'attribute_not_exists(#name)',
            ExpressionAttributeNames: { '#name': 'name' },
          },
          // Already there (maybe edited by an admin): keep it.
          ignoreErrorCodesMatching: 'ConditionalCheckFailedException',
          physicalResourceId: cr.PhysicalResourceId.of(`${prefix}call-type-${callType.id}`),
        },
        policy: cr.AwsCustomResourcePolicy.fromStatements(
          [...seedAccess, ...keyAccess(seedAccess)].map((statement) => new iam.PolicyStatement(statement)),
        ),
      });
    }
    // The seeding's provider: one function for all ten (a singleton of the CDK).
    const seedingProvider = this.node.tryFindChild(SEEDING_PROVIDER_ID);
    if (!seedingProvider) {
      throw new Error(`the seeding provider ${SEEDING_PROVIDER_ID} is not where the CDK used to put it`);
    }
    skipCheckov(seedingProvider, CHECKOV.noVpc, CHECKOV.seedingDlq, CHECKOV.seedingConcurrency);

    // --- Alarms: the API's 5xx share, throttles and errors of each function
    // (an error is a crash or a timeout: the handlers always answer), and the
    // broadcast's failure queue and iterator age.
    // In production the topic is encrypted with the installation's key, which
    // CloudWatch may use to publish this stack's alarms.
    const topic = props.alarmEmail
      ? new sns.Topic(this, 'AlarmTopic', { displayName: `nurse-call ${installation} alarms`, masterKey: key })
      : undefined;
    if (topic && props.alarmEmail) {
      topic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
      if (key) {
        key.addToResourcePolicy(
          new iam.PolicyStatement({
            sid: 'AlarmsOfThisStackPublish',
            principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
            actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
            resources: ['*'],
            conditions: {
              StringEquals: { 'aws:SourceAccount': this.account },
              ArnLike: { 'aws:SourceArn': `arn:${this.partition}:cloudwatch:${this.region}:${this.account}:alarm:nurse-call-${installation}-*` },
            },
          }),
        );
      } else {
        skipCheckov(topic, CHECKOV.sandboxTopicKey);
      }
    }
    const alarms: cloudwatch.Alarm[] = [...liveAlarms];
    const period = Duration.minutes(5);
    const rate = new cloudwatch.MathExpression({
      label: 'API 5xx rate (%)',
      expression: 'IF(requests > 0, 100 * errors / requests, 0)',
      usingMetrics: {
        errors: this.api.metricServerError({ period, statistic: 'Sum' }),
        requests: this.api.metricCount({ period, statistic: 'Sum' }),
      },
      period,
    });
    alarms.push(
      rate.createAlarm(this, 'Api5xxRateAlarm', {
        alarmName: `nurse-call-${installation}-api-5xx-rate`,
        alarmDescription: `More than ${props.api5xxRatePercent ?? 5}% of the API's requests answered 5xx (503: DynamoDB failing or throttled after retries)`,
        threshold: props.api5xxRatePercent ?? 5,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    );
    for (const name of functionsOf(mode)) {
      const fn = fns[name];
      alarms.push(
        fn.metricThrottles({ period, statistic: 'Sum' }).createAlarm(this, `${pascal(name)}ThrottlesAlarm`, {
          alarmName: `nurse-call-${installation}-${name}-throttles`,
          alarmDescription: `The ${name} function was throttled (account or reserved concurrency exhausted)`,
          threshold: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        }),
        fn.metricErrors({ period, statistic: 'Sum' }).createAlarm(this, `${pascal(name)}ErrorsAlarm`, {
          alarmName: `nurse-call-${installation}-${name}-errors`,
          alarmDescription: `The ${name} function failed (crash, timeout or failed cold start)`,
          threshold: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        }),
      );
    }
    if (topic) {
      for (const alarm of alarms) {
        alarm.addAlarmAction(new cloudwatchActions.SnsAction(topic));
      }
    }

    // --- Outputs: what the admin command and the docs need.
    new CfnOutput(this, 'ApiUrl', { value: this.stage.url, description: 'Base URL of the API' });
    new CfnOutput(this, 'LiveUrl', {
      value: this.live.url,
      description: "The displays' live socket (WebSocket API stage; the display page gets it as DISPLAY_LIVE_URL)",
    });
    new CfnOutput(this, 'CallTypesTableName', {
      value: callTypes.tableName,
      description: 'Call types (admins edit them in the DynamoDB console)',
    });
    new CfnOutput(this, 'ConsumersTableName', { value: consumers.tableName, description: 'Consumers' });
    new CfnOutput(this, 'DataTableName', { value: data.tableName, description: 'Elements and calls' });
    if (key) {
      new CfnOutput(this, 'DataKeyArn', {
        value: key.keyArn,
        description: 'KMS key of the tables, logs and alarm topic (admins need kms:Decrypt, and kms:Encrypt and kms:GenerateDataKey to write)',
      });
    }
  }
}

/** `call-types` → `CallTypes` (construct ids). */
function pascal(name: string): string {
  return name
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}

/**
 * Rejects a zone name that is not IANA, spelt exactly (the functions parse it
 * case-sensitively and would fail to start).
 */
function checkTimeZone(zone: string): void {
  let resolved: string | undefined;
  try {
    resolved = new Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    resolved = undefined;
  }
  const miscased = resolved !== undefined && resolved !== zone && resolved.toLowerCase() === zone.toLowerCase();
  const segments = zone.split('/').every((segment) => /^[A-Z][A-Za-z0-9_+-]*$/.test(segment));
  if (resolved === undefined || miscased || !segments) {
    throw new Error(`time zone ${JSON.stringify(zone)}: expected an IANA name such as Europe/Berlin`);
  }
}
