// An upstream MCP server written with the TypeScript SDK v2
// (@modelcontextprotocol/server 2.4.0) that speaks only revision
// 2026-07-28 over stdio (a 2025 opening is refused): toolsvc's upstream
// client must discover it and speak that revision. Its tools ask the
// client through input_required results (form and URL elicitation,
// sampling) and report progress. Driven by TestTypeScriptUpstream2026
// (internal/tools/upstream).
import { McpServer, inputRequired } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod/v4';

serveStdio(() => {
    const server = new McpServer({ name: 'ts-upstream', version: '1.0.0' }, { capabilities: { tools: {} } });
    const ask = (name, request) =>
        server.registerTool(name, { description: `Asks the client (${name}).`, inputSchema: z.object({}) }, async (_args, ctx) => {
            const answer = ctx.mcpReq.inputResponses?.q;
            if (answer === undefined) {
                return inputRequired({ inputRequests: { q: request }, requestState: 'ts-round-1' });
            }
            const out = { answer, state: ctx.mcpReq.requestState() ?? null };
            return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
        });
    ask('confirm', inputRequired.elicit({ message: 'Delete 3 files?', requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } }));
    ask('login', inputRequired.elicitUrl({ message: 'Sign in to the archive.', url: 'https://archive.example/login?state=abc' }));
    ask('summarize', inputRequired.createMessage({ maxTokens: 50, messages: [{ role: 'user', content: { type: 'text', text: 'Summarize: the sky is blue.' } }] }));
    server.registerTool('count', { description: 'Counts to two with progress.', inputSchema: z.object({}) }, async (_args, ctx) => {
        const token = ctx.mcpReq._meta?.progressToken;
        for (let i = 1; token !== undefined && i <= 2; i++) {
            await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: 2, message: `step ${i}` } });
        }
        const out = { token: token !== undefined };
        return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
    });
    return server;
}, { legacy: 'reject' });
