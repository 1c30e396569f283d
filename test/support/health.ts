// The standard gRPC health check, asked the way a load balancer or Kubernetes probe asks it.
import { credentials, makeGenericClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';

/** 'SERVING', 'NOT_SERVING', ... for `serviceName` ('' for the whole server). */
export function healthStatus(addr: string, serviceName = ''): Promise<string> {
  const Health = makeGenericClientConstructor(healthService, 'Health');
  const health = new Health(addr, credentials.createInsecure());
  return new Promise<string>((resolve, reject) =>
    (health as unknown as Record<string, (r: object, cb: (err: ServiceError | null, res: { status: string }) => void) => void>).check(
      { service: serviceName },
      (err, res) => (err ? reject(err) : resolve(String(res.status))),
    ),
  ).finally(() => health.close());
}
