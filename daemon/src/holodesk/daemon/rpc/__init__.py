"""The gRPC plumbing: the server, the three services, interceptors, auth and credentials.

Everything here speaks grpc.aio; what a session is and how it runs lives in
holodesk.daemon.session, what decides its actions in policies/, dialects/ and engines/.
"""
