# Hand-written for the go sample: a static binary on distroless as its nonroot user.
FROM golang:1.21-bookworm AS build
WORKDIR /src
COPY go.mod ./
RUN go mod download
COPY main.go ./
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /server .

FROM gcr.io/distroless/static-debian12
COPY --from=build /server /server
ENV PORT=8080
USER 65532:65532
EXPOSE 8080
CMD ["/server"]
