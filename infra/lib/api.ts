/**
 * The HTTP API: exactly the routes of the spec (plus the sandbox's in sandbox
 * mode), each to its function (infra/lib/functions.ts), on one `$default`
 * stage with access logs and a throttle per route group, the central
 * systems' ingestion's its own (DECISIONS §20; stack parameters). The displays' WebSocket API is
 * infra/lib/live.ts's.
 */
import { CfnParameter, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as lambda from 'aws-cdk-lib/aws-lambda';

import { LogGroupFactory } from './data';
import { FunctionName, functionsOf, pascal } from './functions';
import type { ServiceMode } from './nurse-call-stack';

/**
 * The HTTP API routes of each function (DECISIONS §8, §11, §14, spec 4).
 * live-connect serves the WebSocket API's `$connect` and `$disconnect`,
 * broadcast the data table's stream (infra/lib/live.ts), alarm the stream
 * and the timer queue (infra/lib/alarm-timers.ts), deliver the delivery
 * queue (infra/lib/deliveries.ts) and forward the webhook queue
 * (infra/lib/webhooks.ts): no HTTP routes.
 */
export const ROUTES: Record<FunctionName, string[]> = {
  // And an alarm server's signed response (DECISIONS §16): a signed request
  // answered by the same alarm engine (issue 47: the staff function's zip has no room).
  display: ['/api/v1/display', '/api/v1/response'],
  'display-read': ['/api/v1/display/calls', '/api/v1/display/elements', '/display'],
  // A central system's heartbeat (DECISIONS §19): the element function's zip has room.
  element: ['/api/v1/element', '/api/v1/heartbeat'],
  // The reads without credentials; the staff page, its manifest and its
  // service worker (DECISIONS §15) too: the staff function's zip has no
  // room for them (its 3 MB budget, issue 45).
  'call-types': [
    '/api/v1/display/call-types',
    '/api/v1/openapi.json',
    '/staff',
    '/staff/manifest.webmanifest',
    '/staff/sw.js',
    // The phones' Web Push registration (DECISIONS §15), with the staff
    // token: the staff function's zip has no room for it (issue 47).
    '/api/v1/staff/push-key',
    '/api/v1/staff/push-subscriptions',
  ],
  sandbox: ['/', '/api/v1/sandbox/consumers', '/api/v1/sandbox/state', '/api/v1/sandbox/staff'],
  staff: [
    '/api/v1/staff/me',
    '/api/v1/staff/duty',
    '/api/v1/staff/calls',
    '/api/v1/staff/calls/{id}/responses',
    // The receipts of the phones and pages (DECISIONS §18).
    '/api/v1/staff/receipts',
    // The sign-on test again, "Erneut testen" (DECISIONS §18).
    '/api/v1/staff/device-tests',
  ],
  'live-connect': [],
  broadcast: [],
  alarm: [],
  deliver: [],
  forward: [],
};

/** The functions behind HTTP API routes: the request path (they get CALL_RETENTION_DAYS). */
export function httpFunctionsOf(mode: ServiceMode): FunctionName[] {
  return functionsOf(mode).filter((name) => ROUTES[name].length > 0);
}

/**
 * The route groups with a throttle of their own (DECISIONS §20): a flood at
 * one group never uses up another's budget. The central systems'
 * ingestion (`POST /api/v1/display`, `/element`, an alarm server's
 * `/response`, `/heartbeat`) has the largest; the staff API,
 * the pages with the displays' reads and the interface document, and the
 * sandbox's endpoints each have theirs.
 */
export type ThrottleGroup = 'ingestion' | 'staff' | 'pages' | 'sandbox';

/** Which group a route's path is in (see {@link ThrottleGroup}). */
export function throttleGroupOf(routePath: string): ThrottleGroup {
  if (['/api/v1/display', '/api/v1/element', '/api/v1/response', '/api/v1/heartbeat'].includes(routePath)) {
    return 'ingestion';
  }
  if (routePath === '/' || routePath.startsWith('/api/v1/sandbox/')) {
    return 'sandbox';
  }
  if (routePath.startsWith('/api/v1/staff/')) {
    return 'staff';
  }
  return 'pages';
}

/** The ingestion's throttle unless the stack's parameters say otherwise (DECISIONS §20). */
export const INGESTION_THROTTLE: apigwv2.ThrottleSettings = { rateLimit: 100, burstLimit: 200 };

/** Each group's parameter names: `<Group>ThrottleRate`, `<Group>ThrottleBurst`. */
export function throttleParameterNames(group: ThrottleGroup): { rate: string; burst: string } {
  const name = group.charAt(0).toUpperCase() + group.slice(1);
  return { rate: `${name}ThrottleRate`, burst: `${name}ThrottleBurst` };
}

export interface ApiProps {
  readonly installation: string;
  readonly mode: ServiceMode;
  /** The stack's functions: those of {@link httpFunctionsOf} get their routes. */
  readonly functions: Record<FunctionName, lambda.Function>;
  /** Throttling of the stage. */
  readonly throttle: apigwv2.ThrottleSettings;
  /** Makes the stage's access log group. */
  readonly logGroup: LogGroupFactory;
  /** Removal policy of the access log group. */
  readonly logRemoval: RemovalPolicy;
}

/**
 * The API and its stage. `ANY` routes so that a wrong method reaches the
 * function, which answers the documented 405; everything else reaches the
 * call-types function, which answers the documented 404.
 */
export function createApi(stack: Stack, props: ApiProps): { api: apigwv2.HttpApi; stage: apigwv2.HttpStage } {
  const { installation, mode, functions: fns, logGroup, logRemoval } = props;
  const api = new apigwv2.HttpApi(stack, 'Api', {
    apiName: `nurse-call-${installation}`,
    description: `nurse-call ${installation} (${mode})`,
    createDefaultStage: false,
    defaultIntegration: new HttpLambdaIntegration('DefaultIntegration', fns['call-types']),
  });
  const routes: apigwv2.HttpRoute[] = [];
  const groups = new Map<ThrottleGroup, string[]>();
  for (const name of httpFunctionsOf(mode)) {
    const integration = new HttpLambdaIntegration(`${pascal(name)}Integration`, fns[name]);
    for (const routePath of ROUTES[name]) {
      routes.push(...api.addRoutes({ path: routePath, methods: [apigwv2.HttpMethod.ANY], integration }));
      const group = throttleGroupOf(routePath);
      groups.set(group, [...(groups.get(group) ?? []), `ANY ${routePath}`]);
    }
  }
  const accessLogs = logGroup('ApiAccessLogs', logRemoval);
  const stage = api.addStage('DefaultStage', {
    stageName: '$default',
    autoDeploy: true,
    throttle: props.throttle,
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
  // Each group's throttle on each of its routes, from the stack's
  // parameters (the stage's default, the props' throttle, stays for
  // `$default`, the unknown paths); the routes exist before the stage
  // names them.
  const routeSettings: Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }> = {};
  for (const [group, routeKeys] of groups) {
    const defaults = group === 'ingestion' ? INGESTION_THROTTLE : props.throttle;
    const names = throttleParameterNames(group);
    const rate = new CfnParameter(stack, names.rate, {
      type: 'Number',
      default: defaults.rateLimit,
      minValue: 1,
      description: `Steady requests per second of each ${group} route of the HTTP API (DECISIONS §20; docs/deploy.md, Throttles)`,
    });
    const burst = new CfnParameter(stack, names.burst, {
      type: 'Number',
      default: defaults.burstLimit,
      minValue: 1,
      description: `Burst of each ${group} route of the HTTP API (requests)`,
    });
    for (const routeKey of routeKeys) {
      routeSettings[routeKey] = { ThrottlingRateLimit: rate.valueAsNumber, ThrottlingBurstLimit: burst.valueAsNumber };
    }
  }
  const cfnStage = stage.node.defaultChild as apigwv2.CfnStage;
  cfnStage.routeSettings = routeSettings;
  for (const route of routes) {
    cfnStage.node.addDependency(route);
  }
  return { api, stage };
}
